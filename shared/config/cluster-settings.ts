import { z } from 'zod';

/** The fleet on a nats-server cluster: how its streams outlive a node, and placement by lease. */
export const ClusterSettingsSchema = z
  .object({
    /**
     * Placement by lease: which host runs which agent lives in the fleet's KV bucket on NATS
     * (`<FLEET>_PLACEMENT`), each host holds a lease it renews, and each agent stops itself before
     * its host's lease could end, so no agent runs twice even when its supervisor is paused or cut
     * off. Off, the fleet's data lock on this host decides, as before.
     * @default false
     */
    enabled: z.boolean().default(false),
    /**
     * How long a host's lease lasts after its last renewal: another host may take its agents once
     * the NATS server's clock says this long has passed.
     * @default 10000
     */
    lease_ms: z.number().int().min(1000).max(600_000).default(10_000),
    /**
     * How often a host renews its lease and extends its agents'.
     * @default 2000
     */
    renew_ms: z.number().int().min(100).max(300_000).default(2000),
    /**
     * How long before its lease could end an agent stops itself: what covers the clocks of the
     * host and of the NATS servers running at slightly different rates, and a busy agent's timer
     * firing late.
     * @default 2000
     */
    fence_margin_ms: z.number().int().min(100).max(300_000).default(2000),
    /**
     * The environment variable holding the secret (at least 32 characters, e.g. `openssl rand
     * -base64 32`) that seals each agent's NATS key in the cluster's key bucket (`<FLEET>_KEYS`),
     * so that a host holds only the keys of the agents it runs. Read by every host's supervisor
     * and by `thymos nats-config`, and only with `enabled` and `[nats] identities`.
     * @default "THYMOS_FLEET_KEY"
     */
    key_env: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'expected the name of an environment variable (letters, digits and _)' })
      .default('THYMOS_FLEET_KEY'),
    /**
     * How many nodes of the nats-server cluster keep each stream the fleet makes (events, heard
     * copies, inboxes, work queues, dead letters), each node a whole copy. With 3, every write
     * nats-server acknowledged outlives the loss of one node and the fleet goes on through it.
     * Needs a cluster of at least three nodes with JetStream that you run (`[nats] url`). A stream
     * kept on another number of nodes is brought to this one when the supervisor starts.
     * @default 1
     */
    replicas: z
      .literal([1, 3], { error: 'expected 1 (one node keeps each stream) or 3 (three nodes of a nats-server cluster do)' })
      .default(1),
  })
  .strict()
  .superRefine((c, ctx) => {
    // Two renewals fit between one and the agents' fence: one lost renewal does not stop them.
    if (c.renew_ms * 2 > c.lease_ms - c.fence_margin_ms)
      ctx.addIssue({
        code: 'custom',
        path: ['renew_ms'],
        message: `expected renew_ms at most (lease_ms - fence_margin_ms) / 2 = ${Math.floor((c.lease_ms - c.fence_margin_ms) / 2)}, so that two renewals fit before agents stop themselves; got ${c.renew_ms} with lease_ms ${c.lease_ms} and fence_margin_ms ${c.fence_margin_ms}`,
      });
  });

export type ClusterSettings = z.infer<typeof ClusterSettingsSchema>;

/** How many nodes keep each stream: `[cluster] replicas`. */
export type StreamReplicas = ClusterSettings['replicas'];
