import { z } from 'zod';

/** The fleet on a nats-server cluster: how its streams outlive a node. */
export const ClusterSettingsSchema = z
  .object({
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
  .strict();

export type ClusterSettings = z.infer<typeof ClusterSettingsSchema>;

/** How many nodes keep each stream: `[cluster] replicas`. */
export type StreamReplicas = ClusterSettings['replicas'];
