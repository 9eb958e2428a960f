/** Weight sync into launched engines: the trainer's newest policy, served by every replica. */
export { createEngineSync, syncDirFor, type EngineSync, type EngineSyncOptions } from './engine-sync.js';
export { replicaAdmin, type BroadcastReceiver, type ReplicaAdmin } from './replica-admin.js';
export { trackRequests, type RequestTracker, type TrackedEngine } from './in-flight.js';
export { createWeightBroadcast, type SyncTransfer, type WeightSender } from './weight-broadcast.js';
export { SYNC_FAULT_ENV, syncFault, type SyncFault } from './sync-fault.js';
