package workhorse

// Every statement the worker sends: the same SQL functions, arguments and result columns as the
// TypeScript worker's. The conformance file (sdk/conformance/enqueue.json, workerCalls) pins each
// function's argument types and result columns; conformance_test.go checks these statements
// against it, so a change to one of the functions fails here as it fails in the other clients.
const (
	sqlClaimJobs = `select id::text, queue, type, payload::text, attempt, max_attempts, run_at, deadline,
	    execution_timeout_ms, concurrency_key, tags, created_at, lease_expires_at
	  from workhorse.claim_jobs($1::text[], $2::text[], $3::text, $4::integer, $5::integer, $6::boolean)`
	sqlReadCheckpoint = "select value::text from workhorse.job_checkpoint where job_id = $1::uuid and name = $2::text"
	sqlSaveCheckpoint = "select status, value::text from workhorse.save_checkpoint($1::uuid, $2::integer, $3::text, $4::text, $5::jsonb, $6::integer)"
	sqlHeartbeatJobs  = "select id::text, lease_owner, cancel_requested from workhorse.heartbeat_jobs($1::uuid[], $2::integer[], $3::text[], $4::integer)"
	sqlReleaseJobs    = "select id::text from workhorse.release_jobs($1::uuid[], $2::integer[], $3::text[], $4::text)"
	sqlCancelAttempt  = "select id::text from workhorse.cancel_attempt($1::uuid, $2::integer, $3::text)"
	sqlCompleteJobs   = "select id::text from workhorse.complete_jobs($1::uuid[], $2::integer[], $3::text[], $4::jsonb[])"
	sqlFailJob        = "select state from workhorse.fail_job($1::uuid, $2::integer, $3::text, $4::jsonb, $5::text, $6::jsonb)"
)
