/**
 * What the console's reads use of the store's core statements and its root (the handle, row mappers,
 * job ids, read-only reads), re-exported here so the console imports only the core's public surface
 * and lib/store/console (test/module-graph.test.ts).
 */

export { jobExists, jobIdsEndingWith, jobIdsInRange, selectJobDetail, selectJobPayload } from "../core/jobs";
export { GONE_AFTER_MISSED_CHECK_INS } from "../core/maintenance";
export { selectPausedQueues } from "../core/operator-actions";
export { uuidv7Floor } from "../ids";
export { type Sql, sqlOf } from "../layout";
export { readWithTimeout } from "../pool-client";
export { BINDING_COLUMNS, type BindingRow, bindingFromRow, type ObservationRow, observationFromRow } from "../rows";
export type { CheckIn } from "../worker/claims";
