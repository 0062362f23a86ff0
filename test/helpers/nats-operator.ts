import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { encodeAccount, encodeOperator, encodeUser, fmtCreds } from '@nats-io/jwt';
import { createAccount, createOperator, createUser, type KeyPair } from '@nats-io/nkeys';

/** An operator-mode (JWT) setup for a test nats-server: its configuration lines, and a way to make users' credentials files. */
export interface TestOperator {
  /** Lines of a nats-server configuration: the operator, the system account and one account with JetStream, preloaded. */
  config: string[];
  /** Writes `<dir>/<name>.creds` (mode 0600) for a new user of the account, allowed everything; returns its path. */
  creds(dir: string, name: string): Promise<string>;
}

/** Makes an operator, its system account and an account with JetStream and no limits, signed as `nsc` would. */
export async function makeTestOperator(): Promise<TestOperator> {
  const operator = createOperator();
  const system = createAccount();
  const account = createAccount();
  const unlimited = {
    subs: -1,
    conn: -1,
    leaf: -1,
    imports: -1,
    exports: -1,
    data: -1,
    payload: -1,
    wildcards: true,
    mem_storage: -1,
    disk_storage: -1,
    streams: -1,
    consumer: -1,
  };
  const operatorJwt = await encodeOperator('test-operator', operator, { system_account: system.getPublicKey() });
  const systemJwt = await encodeAccount('SYS', system, {}, { signer: operator });
  const accountJwt = await encodeAccount('FLEET', account, { limits: unlimited } as never, { signer: operator });
  const config = [
    `operator: ${operatorJwt}`,
    `system_account: ${system.getPublicKey()}`,
    'resolver: MEMORY',
    'resolver_preload: {',
    `  ${system.getPublicKey()}: ${systemJwt}`,
    `  ${account.getPublicKey()}: ${accountJwt}`,
    '}',
  ];
  return {
    config,
    async creds(dir: string, name: string): Promise<string> {
      const user: KeyPair = createUser();
      const jwt = await encodeUser(name, user, account, { pub: { allow: ['>'] }, sub: { allow: ['>'] } } as never);
      mkdirSync(dir, { recursive: true });
      const file = join(dir, `${name}.creds`);
      writeFileSync(file, fmtCreds(jwt, user), { mode: 0o600 });
      chmodSync(file, 0o600);
      return file;
    },
  };
}
