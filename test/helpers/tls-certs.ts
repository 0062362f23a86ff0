import { execFileSync } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** PEM files of a test certificate authority, a server certificate for `localhost` and 127.0.0.1, and a client certificate, all signed by it. */
export interface TestCerts {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

/**
 * Makes a throwaway certificate authority and the certificates a TLS nats-server and its
 * clients use, with the openssl command line, in `dir` (valid two days; keys mode 0600).
 */
export function makeTestCerts(dir: string): TestCerts {
  const at = (f: string) => join(dir, f);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...key, '-keyout', at('ca.key'), '-out', at('ca.pem'), '-days', '2', '-subj', '/CN=Thymos test CA');
  const sign = (name: string, subject: string, extensions: string) => {
    openssl('req', ...key, '-keyout', at(`${name}.key`), '-out', at(`${name}.csr`), '-subj', subject);
    writeFileSync(at(`${name}.ext`), `${extensions}\n`);
    openssl(
      'x509',
      '-req',
      '-in',
      at(`${name}.csr`),
      '-CA',
      at('ca.pem'),
      '-CAkey',
      at('ca.key'),
      '-CAcreateserial',
      '-out',
      at(`${name}.pem`),
      '-days',
      '2',
      '-extfile',
      at(`${name}.ext`),
    );
    chmodSync(at(`${name}.key`), 0o600);
  };
  sign('server', '/CN=localhost', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth');
  sign('client', '/CN=thymos-fleet', 'extendedKeyUsage=clientAuth');
  return {
    ca: at('ca.pem'),
    serverCert: at('server.pem'),
    serverKey: at('server.key'),
    clientCert: at('client.pem'),
    clientKey: at('client.key'),
  };
}
