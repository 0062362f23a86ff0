/**
 * The supervisor: registry, relevance, reconciliation over pm2, the world store and
 * the control API on NATS. Not part of this release yet; see README "Status".
 */
export {};
