// `npx tsx scripts/conformance.ts`: writes sdk/conformance/enqueue.json, the cases every client in
// another language must reproduce byte for byte (docs/clients.md, "Conformance"). The expected
// values are computed by the TypeScript core's own functions (normalizeRequest, the key ring,
// encodePayload, the enqueue_one parameter table). `--check` writes nothing and exits 1 when the
// checked-in file differs from what this script would write.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { normalizeRequest } from "../lib/enqueue/enqueue-input";
import { EnqueueValidationError } from "../lib/enqueue/errors";
import { KeyRing, legacyKeyHash } from "../lib/enqueue/keys";
import { LIMITS } from "../lib/enqueue/limits";
import { encodePayload } from "../lib/enqueue/payload";
import { jsonbText } from "../lib/enqueue/payload-text";
import { FINGERPRINT_FIELDS } from "../lib/enqueue/vocabulary";
import { ENQUEUE_HOLD_PARAM, ENQUEUE_ONE_PARAMS, oneRequestValues } from "../lib/store/core/enqueue";
import { bucketedId, keyBucket } from "../lib/store/ids";
import { WORKER_FUNCTIONS } from "../lib/store/worker/calls";
import { fieldDigestsOf, payloadDigestOf } from "./field-digests";
import { writeOrCheck } from "./generated-file.mjs";

const OUT = new URL("../sdk/conformance/enqueue.json", import.meta.url);
const SECRET_HEX = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
const JOB_ID = "01890000-0000-7000-8000-000000000001";

/** What a case may need that not every language can express; a client skips the cases it cannot. */
type Need =
  | "loneSurrogate" // a string holding an unpaired UTF-16 surrogate
  | "optionShape" // options given as something other than the documented names and types
  | "explicitNull"; // an option given as null (Python None); Go's typed options have no null

interface CaseInput {
  type: unknown;
  /** The payload as JSON text; the client parses it itself (numbers are IEEE-754 doubles). */
  payloadText: string;
  /** camelCase option names as in TypeScript; runAt and deadline as ISO 8601 strings. */
  options?: Record<string, unknown>;
  /** The Queue's payload bound for this case (default LIMITS.defaultPayloadBytes). */
  maxPayloadBytes?: number;
}
interface CaseDef {
  name: string;
  input: CaseInput;
  needs?: Need[];
}

const cases: CaseDef[] = [];
const add = (name: string, input: CaseInput, needs?: Need[]) =>
  cases.push({ name, input, ...(needs ? { needs } : {}) });
const p = (payload: unknown) => JSON.stringify(payload);
const idem = (key: string, more: Record<string, unknown> = {}) => ({ idempotency: { key, ...more } });
const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth);

// --- payloads: the canonical text and its size
add("payload: object", { type: "t", payloadText: '{"b":1,"a":[true,false,null],"c":"x"}', options: idem("k1") });
add("payload: key order does not matter (same as previous but reordered)", {
  type: "t",
  payloadText: '{"c":"x","a":[true,false,null],"b":1}',
  options: idem("k1"),
});
add("payload: integer-like keys", { type: "t", payloadText: '{"b":1,"10":2,"2":3,"a":4}', options: idem("k1") });
add("payload: 42.0 is 42", { type: "t", payloadText: '{"n":42.0}', options: idem("k1") });
add("payload: 42", { type: "t", payloadText: '{"n":42}', options: idem("k1") });
add("payload: -0 is 0", { type: "t", payloadText: "[-0, -0.0, 0]", options: idem("k1") });
add("payload: exponent forms", {
  type: "t",
  payloadText: "[1e21, 1e20, 123456789012345680000, 1e-7, 0.000001, -1e-7, 1.5e300, 5e-324, 0.1, 1e16, 2.5e-10]",
  options: idem("k1"),
});
add("payload: big integers are doubles", {
  type: "t",
  payloadText: "[12345678901234567890, 9007199254740993, -9007199254740991, 18446744073709551616]",
  options: idem("k1"),
});
add("payload: numbers beside booleans", { type: "t", payloadText: "[1, true, 0, false, 1.0]", options: idem("k1") });
add("payload: strings that need escapes", {
  type: "t",
  payloadText: p({ q: 'a"b\\c', ctl: "\u0001\u001f\n\t\b\f\r", del: "\u007f", u2028: "\u2028", emoji: "😀é" }),
  options: idem("k1"),
});
add("payload: keys in jsonb order (shorter UTF-8 first, then bytewise)", {
  type: "t",
  payloadText: p({ "😀": 1, é: 2, ab: 3, z: 4, "\uFFFD": 5, aa: 6, "": 7, Z: 8 }),
  options: idem("k1"),
});
add("payload: nested objects and arrays in the jsonb text", {
  type: "t",
  payloadText: '{"z":[{"b":[],"a":{}},1.5e-7,"\\u00e9"],"a":{"y":null,"x":[true,-2.5e22]}}',
  options: idem("k1"),
});
add("payload: scalar top-level values", { type: "t", payloadText: '"just a string"' });
add("payload: null", { type: "t", payloadText: "null" });
add("payload: empty containers", { type: "t", payloadText: '{"a":{},"b":[]}' });
add("payload: duplicate keys, last wins", { type: "t", payloadText: '{"a":1,"b":2,"a":3}' });
add("payload: nested 100 levels", { type: "t", payloadText: nested(100) });
add("payload: nested 101 levels", { type: "t", payloadText: nested(101) });
add("payload: nested 101 levels in objects", {
  type: "t",
  payloadText: `${'{"a":'.repeat(100)}{}${"}".repeat(100)}`,
});
add("payload: NUL in a string", { type: "t", payloadText: '{"a":["x\\u0000y"]}' });
add("payload: NUL in a key", { type: "t", payloadText: '{"a\\u0000":1}' });
add("payload: lone surrogate in a string", { type: "t", payloadText: '{"a b":"\\ud800"}' }, ["loneSurrogate"]);
add("payload: lone surrogate in a key", { type: "t", payloadText: '{"\\udc00":1}' }, ["loneSurrogate"]);
add("payload: surrogate pair is fine", { type: "t", payloadText: '"\\ud83d\\ude00"' });
add("payload: at the byte bound (jsonb text with spaces)", {
  type: "t",
  payloadText: '{"a":[1,2]}', // stored as {"a": [1, 2]}: 13 bytes
  maxPayloadBytes: 13,
});
add("payload: one byte over the bound", { type: "t", payloadText: '{"a":[1,2]}', maxPayloadBytes: 12 });
add("payload: exponent expands in PostgreSQL", { type: "t", payloadText: "[1e21]", maxPayloadBytes: 24 });
add("payload: exponent expansion over the bound", { type: "t", payloadText: "[1e21]", maxPayloadBytes: 23 });
add("payload: multi-byte strings count UTF-8 bytes", {
  type: "t",
  payloadText: '"éé😀"', // 2+2+4 bytes + 2 quotes
  maxPayloadBytes: 10,
});
add("payload: multi-byte over the bound", { type: "t", payloadText: '"éé😀"', maxPayloadBytes: 9 });

// --- keys, scopes and what operators see of them
const keyCase = (name: string, key: string, more: Record<string, unknown> = {}, needs?: Need[]) =>
  add(name, { type: "t", payloadText: "{}", options: idem(key, more) }, needs);
keyCase("key: 1 byte", "a");
keyCase("key: 2 code points preview as …", "ab");
keyCase("key: 3 code points", "abc");
keyCase("key: 24 code points", "abcdefghijklmnopqrstuvwx");
keyCase("key: long key shows at most 8", "capture:INV-000001-and-a-long-tail");
keyCase("key: 512 bytes", "k".repeat(512));
keyCase("key: 513 bytes", "k".repeat(513));
keyCase("key: 512 bytes of 2-byte characters", "é".repeat(256));
keyCase("key: 514 bytes of 2-byte characters", "é".repeat(257));
keyCase("key: empty", "");
keyCase("key: multi-byte", "ключ-идемпотентности-42");
keyCase("key: astral code points", "😀😀😀😀😀😀😀😀😀😀😀😀");
keyCase("key: 128 astral code points (512 bytes)", "😀".repeat(128));
keyCase("key: 129 astral code points (516 bytes)", "😀".repeat(129));
keyCase("key: combining marks count as code points", "e\u0301e\u0301e\u0301e\u0301e\u0301e\u0301");
keyCase("key: control and format characters preview as U+FFFD", "\u0000\u0007\u200b\u202eabcdefghijklmnop");
keyCase("key: NUL is allowed in a key (never stored)", "a\u0000b\u0000c");
keyCase("key: lone surrogate", "abc\ud800def", {}, ["loneSurrogate"]);
keyCase("key: with scope", "capture:INV-000001", { scope: "invoice-capture" });
keyCase("key: scope 256 bytes", "k", { scope: "s".repeat(256) });
keyCase("key: scope 257 bytes", "k", { scope: "s".repeat(257) });
keyCase("key: scope multi-byte 256 bytes", "k", { scope: "ж".repeat(128) });
keyCase("key: scope multi-byte 258 bytes", "k", { scope: "ж".repeat(129) });
keyCase("key: scope empty", "k", { scope: "" });
keyCase("key: scope with NUL", "k", { scope: "a\u0000" });
keyCase("key: scope with lone surrogate", "k", { scope: "a\udfff" }, ["loneSurrogate"]);
keyCase("key: scope with a 0x1F separator byte", "b", { scope: "a\u001f" });
keyCase("key: scope/key split differently hash differently", "\u001fb", { scope: "a" });
keyCase("key: not a string", 42 as unknown as string, {}, ["optionShape"]);
keyCase("ttlMs: 1", "k", { ttlMs: 1 });
keyCase("ttlMs: 365 days", "k", { ttlMs: LIMITS.maxWindowMs });
keyCase("ttlMs: 365 days + 1", "k", { ttlMs: LIMITS.maxWindowMs + 1 });
keyCase("ttlMs: 0", "k", { ttlMs: 0 });
keyCase("ttlMs: fractional", "k", { ttlMs: 1.5 });
keyCase("ttlMs: not a number", "k", { ttlMs: "100" }, ["optionShape"]);
keyCase("idempotency: unknown field", "k", { ttl: 5 }, ["optionShape"]);

// --- names
const opt = (name: string, options: Record<string, unknown>, needs?: Need[], type: unknown = "t") =>
  add(name, { type, payloadText: "{}", options }, needs);
opt("type: 128 characters", {}, undefined, "t".repeat(128));
opt("type: 128 astral characters", {}, undefined, "😀".repeat(128));
opt("type: 129 characters", {}, undefined, "t".repeat(129));
opt("type: empty", {}, undefined, "");
opt("type: control character", {}, undefined, "a\tb");
opt("type: DEL is a control character", {}, undefined, "a\u007f");
opt("type: C1 control character", {}, undefined, "a\u0085");
opt("type: format character is allowed", {}, undefined, "a\u200bb");
opt("type: lone surrogate", {}, ["loneSurrogate"], "a\ud800");
opt("type: not a string", {}, ["optionShape"], 7);
opt("queue: 128 characters", { queue: "q".repeat(128) });
opt("queue: 129 characters", { queue: "q".repeat(129) });
opt("queue: empty", { queue: "" });
opt("queue: newline", { queue: "a\nb" });
opt("queue: multi-byte", { queue: "очередь" });

// --- tags
opt("tags: sorted bytewise, duplicates removed", { tags: ["b", "a", "B", "é", "z", "a", "😀", "\uffff"] });
opt("tags: 32", { tags: Array.from({ length: 32 }, (_, i) => `t${i}`) });
opt("tags: 33", { tags: Array.from({ length: 33 }, (_, i) => `t${i}`) });
opt("tags: 33 with duplicates still refused", { tags: Array.from({ length: 33 }, () => "same") });
opt("tags: tag of 128 characters", { tags: ["x".repeat(128)] });
opt("tags: tag of 129 characters", { tags: ["x".repeat(129)] });
opt("tags: empty tag", { tags: ["a", ""] });
opt("tags: tag with NUL", { tags: ["a\u0000"] });
opt("tags: tag with a control character is allowed", { tags: ["a\tb"] });
opt("tags: empty list", { tags: [] });
opt("tags: not strings", { tags: [1] }, ["optionShape"]);

// --- attempts and retries
opt("maxAttempts: 1", { maxAttempts: 1 });
opt("maxAttempts: 1000", { maxAttempts: 1000 });
opt("maxAttempts: 0", { maxAttempts: 0 });
opt("maxAttempts: 1001", { maxAttempts: 1001 });
opt("maxAttempts: fractional", { maxAttempts: 2.5 });
opt("maxAttempts: integral float", { maxAttempts: 3.0 });
// Out of range and past 2^53 at once: one issue per option (the range), as for any other number.
opt("maxAttempts: 2^63-1", { maxAttempts: 2 ** 63 - 1 });
opt("retryPolicy: multiplier 1e300", {
  retryPolicy: { type: "exponential", initialDelayMs: 10, multiplier: 1e300, maxDelayMs: 100 },
});
opt("debounce: windowMs 1e300", { debounce: { key: "k", windowMs: 1e300 } });
opt("retryPolicy: fixed", { retryPolicy: { type: "fixed", delayMs: 500 } });
opt("retryPolicy: fixed 0", { retryPolicy: { type: "fixed", delayMs: 0 } });
opt("retryPolicy: fixed 365 days", { retryPolicy: { type: "fixed", delayMs: LIMITS.maxWindowMs } });
opt("retryPolicy: fixed over 365 days", { retryPolicy: { type: "fixed", delayMs: LIMITS.maxWindowMs + 1 } });
opt("retryPolicy: fixed negative", { retryPolicy: { type: "fixed", delayMs: -1 } });
opt("retryPolicy: exponential", {
  retryPolicy: { type: "exponential", initialDelayMs: 1000, multiplier: 2, maxDelayMs: 60000 },
});
opt("retryPolicy: exponential multiplier 100", {
  retryPolicy: { type: "exponential", initialDelayMs: 0, multiplier: 100, maxDelayMs: 0 },
});
opt("retryPolicy: exponential multiplier 0", {
  retryPolicy: { type: "exponential", initialDelayMs: 1, multiplier: 0, maxDelayMs: 1 },
});
opt("retryPolicy: exponential multiplier 101", {
  retryPolicy: { type: "exponential", initialDelayMs: 1, multiplier: 101, maxDelayMs: 1 },
});
opt("retryPolicy: exponential max below initial", {
  retryPolicy: { type: "exponential", initialDelayMs: 10, multiplier: 2, maxDelayMs: 9 },
});
opt("retryPolicy: unknown type", { retryPolicy: { type: "linear", delayMs: 5 } }, ["optionShape"]);
opt("retryPolicy: extra field", { retryPolicy: { type: "fixed", delayMs: 5, jitter: true } }, ["optionShape"]);

// --- times
opt("runAt: given", { runAt: "2030-01-02T03:04:05.678Z" });
opt("runAt: year 1", { runAt: "0001-01-01T00:00:00.000Z" });
opt("runAt: year 9999", { runAt: "9999-12-31T23:59:59.999Z" });
opt("runAt and deadline", { runAt: "2030-01-01T00:00:00.000Z", deadline: "2030-01-01T00:00:00.001Z" });
opt("deadline: equal to runAt", { runAt: "2030-01-01T00:00:00.000Z", deadline: "2030-01-01T00:00:00.000Z" });
opt("deadline: before runAt", { runAt: "2030-01-01T00:00:00.000Z", deadline: "2029-12-31T23:59:59.999Z" });
opt("deadline: in the past without runAt", { deadline: "2001-01-01T00:00:00.000Z" });
opt("deadline: in the future without runAt", { deadline: "2999-01-01T00:00:00.000Z" });
opt("executionTimeoutMs: 1", { executionTimeoutMs: 1 });
opt("executionTimeoutMs: 365 days", { executionTimeoutMs: LIMITS.maxWindowMs });
opt("executionTimeoutMs: 0", { executionTimeoutMs: 0 });
opt("executionTimeoutMs: 365 days + 1", { executionTimeoutMs: LIMITS.maxWindowMs + 1 });

// --- the other fields
opt("concurrencyKey: 256 characters", { concurrencyKey: "c".repeat(256) });
opt("concurrencyKey: 257 characters", { concurrencyKey: "c".repeat(257) });
opt("concurrencyKey: empty", { concurrencyKey: "" });
opt("source: given", { source: "billing-service" });
opt("source: 129 characters", { source: "s".repeat(129) });
// An explicit empty or zero option is given, and checked as given, in every client (Go states
// these with a pointer; nil is "not given").
opt("source: empty", { source: "" });
opt("deadline: year 1 is given, and in the past", { deadline: "0001-01-01T00:00:00.000Z" });
opt("debounce: maxWaitMs 0", { debounce: { key: "doc-9", windowMs: 5000, maxWaitMs: 0 } });
opt("debounce: schedule empty", { debounce: { key: "doc-9", windowMs: 5000, schedule: "" } });
opt("debounce: scope empty", { debounce: { key: "doc-9", scope: "", windowMs: 5000 } });
opt("throttle: scope empty", { throttle: { key: "user-3", scope: "", windowMs: 60000 } });
opt("unknown option", { queueName: "x" }, ["optionShape"]);
opt("several failing options are all named", { queue: "", maxAttempts: 0, tags: [""] });

// --- keyed modes, with every field
const full = {
  queue: "billing",
  maxAttempts: 5,
  retryPolicy: { type: "exponential", initialDelayMs: 100, multiplier: 3, maxDelayMs: 10000 },
  deadline: "2999-06-01T00:00:00.000Z",
  executionTimeoutMs: 30000,
  concurrencyKey: "customer-7",
  tags: ["vip", "eu"],
};
opt("idempotency: every field", { ...full, runAt: "2999-01-01T00:00:00.000Z", ...idem("order-1", { ttlMs: 3600000 }) });
opt("idempotency: defaults", idem("order-1"));
opt(
  "idempotency: explicit default scope and ttl are the same request",
  idem("order-1", { scope: "default", ttlMs: 86400000 }),
);
opt("debounce: defaults", { debounce: { key: "doc-9", windowMs: 5000 } });
opt("debounce: every field", {
  ...full,
  debounce: { key: "doc-9", scope: "docs", windowMs: 5000, schedule: "preserve", maxWaitMs: 60000 },
});
opt("debounce: reset", { debounce: { key: "doc-9", windowMs: 5000, schedule: "reset" } });
opt("debounce: maxWaitMs equal to windowMs", { debounce: { key: "doc-9", windowMs: 5000, maxWaitMs: 5000 } });
opt("debounce: maxWaitMs below windowMs", { debounce: { key: "doc-9", windowMs: 5000, maxWaitMs: 4999 } });
opt("debounce: with runAt", { runAt: "2030-01-01T00:00:00.000Z", debounce: { key: "doc-9", windowMs: 5000 } });
opt("debounce: unknown schedule", { debounce: { key: "doc-9", windowMs: 5000, schedule: "later" } }, ["optionShape"]);
opt("debounce: windowMs 0", { debounce: { key: "doc-9", windowMs: 0 } });
opt("debounce: windowMs over 365 days", { debounce: { key: "doc-9", windowMs: LIMITS.maxWindowMs + 1 } });
opt("throttle: defaults", { throttle: { key: "user-3", windowMs: 60000 } });
opt("throttle: with runAt and scope", {
  runAt: "2030-01-01T00:00:00.000Z",
  throttle: { key: "user-3", scope: "mail", windowMs: 60000 },
});
opt("throttle: windowMs 365 days", { throttle: { key: "user-3", windowMs: LIMITS.maxWindowMs } });
opt("two keyed modes", { idempotency: { key: "a" }, throttle: { key: "a", windowMs: 5 } });
opt("three keyed modes", {
  idempotency: { key: "a" },
  debounce: { key: "a", windowMs: 5 },
  throttle: { key: "a", windowMs: 5 },
});
opt("no keyed mode: every field", { ...full, runAt: "2999-01-01T00:00:00.000Z" });

// --- key lifetimes (docs/enqueue.md, "Key lifetimes")
opt("holdUntil: finished (no ttlMs: no time limit)", idem("order-1", { holdUntil: "finished" }));
opt("holdUntil: started with ttlMs", idem("order-1", { holdUntil: "started", ttlMs: 3600000 }));
opt("holdUntil: every field", {
  ...full,
  runAt: "2999-01-01T00:00:00.000Z",
  ...idem("order-1", { scope: "orders", holdUntil: "finished", ttlMs: 86400000 }),
});
opt("holdUntil: unknown value", idem("order-1", { holdUntil: "done" }), ["optionShape"]);
opt("holdUntil: empty", idem("order-1", { holdUntil: "" }), ["optionShape"]);
opt("holdUntil: debounce started", { debounce: { key: "doc-9", windowMs: 5000, holdUntil: "started" } });
opt("holdUntil: throttle refuses it", { throttle: { key: "user-3", windowMs: 60000, holdUntil: "finished" } }, [
  "optionShape",
]);

// --- begin: payload text every client reads alike, and key previews by one shared table ---------
// Text that only looks like a marker is text: the six characters \ufffd are not U+FFFD.
add("payload: the six characters \\ufffd in a string are text", {
  type: "t",
  payloadText: p({ path: "C:\\ufffd\\file", twice: "\\\\ufffd" }),
});
add("payload: U+FFFD itself", { type: "t", payloadText: p({ r: "\ufffd" }) });
add("payload: U+FFFD written as the escape \\ufffd", { type: "t", payloadText: '{"r":"\\ufffd"}' });
add("payload: lone surrogate before a letter", { type: "t", payloadText: '{"s":"\\ud800x"}' }, ["loneSurrogate"]);
add("payload: surrogates in the wrong order", { type: "t", payloadText: '["ok","\\ude00\\ud83d"]' }, ["loneSurrogate"]);
// Integers past 2^53 that a double holds exactly are those doubles (2^62, 2^63, 2^64, -2^63).
add("payload: integers past 2^53 that doubles hold exactly", {
  type: "t",
  payloadText: "[4611686018427387904, 9223372036854775808, 18446744073709551616, -9223372036854775808]",
  options: idem("k1"),
});
// JSON text may spell a number no double holds: JSON.parse reads it as ±Infinity.
add("payload: 1e400 is Infinity", { type: "t", payloadText: "[1e400]" });
add("payload: -1e400 is -Infinity", { type: "t", payloadText: '{"n":{"m":-1e400}}' });
// Key previews hide Cc and Cf by the table in sdk/conformance/key-preview-hidden.json, whatever
// Unicode version the client's runtime has (U+0890 is Cf from Unicode 14, U+13439 from 15).
keyCase("key preview: U+0890 is a format character", "\u0890pound-mark-key");
keyCase("key preview: U+13439 is a format character", "ab\u{13439}c\u{1343f}-hieroglyph-format-key");
keyCase("key preview: U+E0020 (a tag) is a format character", "\u{e0020}\u{e007f}tag-characters-key");
// --- end: payload text every client reads alike, and key previews by one shared table -----------
// --- null is not "not given" (begin) ---------------------------------------------------------
// One rule for every client: an option left out takes its default; an option given as null
// (Python None, in a mapping or a dataclass field) is refused by that option's rule, naming it.
// Go's typed options cannot hold null (a zero value is left out), so Go does not run these.
const nullCase = (name: string, options: Record<string, unknown>) => opt(name, options, ["explicitNull"]);
nullCase("null: queue", { queue: null });
nullCase("null: runAt", { runAt: null });
nullCase("null: maxAttempts", { maxAttempts: null });
nullCase("null: retryPolicy", { retryPolicy: null });
nullCase("null: retryPolicy delayMs", { retryPolicy: { type: "fixed", delayMs: null } });
nullCase("null: deadline", { deadline: null });
nullCase("null: executionTimeoutMs", { executionTimeoutMs: null });
nullCase("null: concurrencyKey", { concurrencyKey: null });
nullCase("null: tags", { tags: null });
nullCase("null: a tag", { tags: ["a", null] });
nullCase("null: source", { source: null });
nullCase("null: idempotency", { idempotency: null });
nullCase("null: debounce", { debounce: null });
nullCase("null: throttle", { throttle: null });
nullCase("null: idempotency key", { idempotency: { key: null } });
nullCase("null: idempotency scope", { idempotency: { key: "k", scope: null } });
nullCase("null: idempotency ttlMs", { idempotency: { key: "k", ttlMs: null } });
nullCase("null: debounce scope, schedule and maxWaitMs", {
  debounce: { key: "k", windowMs: 5000, scope: null, schedule: null, maxWaitMs: null },
});
nullCase("null: throttle windowMs and scope", { throttle: { key: "k", windowMs: null, scope: null } });
nullCase("null: idempotency holdUntil", { idempotency: { key: "k", holdUntil: null } });
nullCase("null: several options are all named", {
  queue: null,
  maxAttempts: null,
  idempotency: { key: "k", ttlMs: null },
});
// --- null is not "not given" (end) -----------------------------------------------------------
// --- subclasses of JSON's types (begin) -----------------------------------------------------
// Plain values here; the Python client's test builds each from subclasses of int, float, str, list,
// tuple and dict that override how they print and iterate (an Enum member mixing in int, an int whose
// __str__ is another number, a dict whose items() lies, ...), and checks it gets this case's texts:
// a subclass is written as its base type's value, never through its own methods. TypeScript and Go
// read them as the plain values they are.
add("payload: subclass: enum members that mix in int are their ints", {
  type: "t",
  payloadText: '{"color":1,"colors":[2,1],"flag":true,"big":4611686018427387904}',
  options: idem("k1"),
});
add("payload: subclass: an int subclass whose __str__ and __repr__ say another number", {
  type: "t",
  payloadText: '{"n":5,"m":[-7,0],"past 2^53":18446744073709551616}',
  options: idem("k1"),
});
add("payload: subclass: a str subclass whose __str__, __iter__ and __len__ say otherwise", {
  type: "t",
  payloadText: p({ s: "text", escaped: 'a"b\n', key: "é😀" }),
  options: idem("k1"),
});
add("payload: subclass: str subclass keys are their strings, in jsonb's order", {
  type: "t",
  payloadText: p({ bb: 1, a: 2, é: 3, c: 4 }),
  options: idem("k1"),
});
add("payload: subclass: a float subclass whose __repr__ says another number", {
  type: "t",
  payloadText: "[1.5, 1e21, -2.5e-7, 0.1]",
  options: idem("k1"),
});
add("payload: subclass: a dict subclass whose items, keys, __iter__ and __getitem__ say otherwise", {
  type: "t",
  payloadText: '{"a":1,"b":[2,{"c":null}]}',
  options: idem("k1"),
});
add("payload: subclass: a list subclass whose __iter__, __getitem__ and __len__ say otherwise", {
  type: "t",
  payloadText: '[1,"two",[3]]',
  options: idem("k1"),
});
add("payload: subclass: a tuple subclass whose __iter__ says otherwise", {
  type: "t",
  payloadText: '[1,"a"]',
  options: idem("k1"),
});
add("payload: subclass: at the byte bound though __len__ says more", {
  type: "t",
  payloadText: '{"s":"abcdef"}', // stored as {"s": "abcdef"}: 15 bytes
  maxPayloadBytes: 15,
});
add("payload: subclass: over the byte bound though __len__ says less", {
  type: "t",
  payloadText: '{"s":"abcdef"}',
  maxPayloadBytes: 14,
});
add("payload: subclass: nested 100 levels of list subclasses", { type: "t", payloadText: nested(100) });
add("payload: subclass: nested 101 levels of list subclasses whose __len__ says 0", {
  type: "t",
  payloadText: nested(101),
});
// --- subclasses of JSON's types (end) -------------------------------------------------------

// --- payloads as PostgreSQL gives them back (begin) ------------------------------------------
// A payload PostgreSQL stored comes back as its jsonb text (payload::text): numbers without
// exponents, so 1e23 comes back as 100000000000000000000000 and the largest double as 309 digits.
// Every client must accept that text (a job read back and enqueued again) as the same payload:
// `roundTrip` gives each payload's text, the jsonb text PostgreSQL stores and gives back, the
// canonical text and the digest, and each client's test enqueues the payload with a key, reads it
// back from PostgreSQL and enqueues what it read with the same key, which must replay.
const roundTripPayloads: Array<[name: string, payloadText: string]> = [
  ["1e23 comes back as 100000000000000000000000", '{"n":1e23}'],
  [
    "exponent forms come back written out",
    "[1e21, 1e22, -2.5e22, 1.5e300, 1.7976931348623157e308, -1.7976931348623157e308, 5e-324, 2.2250738585072014e-308, 1e-7, -1.5e-7]",
  ],
  [
    "integers past 2^53 come back as the doubles they are",
    "[18446744073709551616, 4611686018427387904, -9223372036854775808, 9007199254740992, 12345678901234567000, 123456789012345680000]",
  ],
  ["below and at 1e21", "[999999999999999900000, 1e21, 100000000000000000000, 0.000001, 1e-6]"],
  ["numbers in nested objects", '{"z":[{"b":-1e25,"a":{"x":[1e300]}}],"a":{"y":null,"n":-0}}'],
  ["every kind of value", p({ s: 'é😀\n"\\', a: [true, false, null, {}, []], "": 0, k: 0.1, n: -42, "\u2028": "x" })],
];

// How a client that reads JSON text's integers exactly (Go's json.RawMessage, Python's json.loads)
// takes an integer literal past 2^53: a literal that is a double (its exact value, or its shortest
// digits as JavaScript writes them or as PostgreSQL does) is that double, written as TypeScript
// writes it; any other is refused, never rounded (JSON.parse would round it to a different number;
// TypeScript itself has only doubles and refuses BigInt). Within 2^53 every integer is exact.
const NOT_A_DOUBLE =
  "must be a number a double holds exactly (an integer past 2^53 must be a double itself); send it as a string";
const integerLiterals = [
  "9007199254740992", // 2^53
  "9007199254740993",
  "-9007199254740993",
  "9007199254740994",
  "4611686018427387904", // 2^62, exactly
  "4611686018427388000", // 2^62 as JavaScript writes it
  "4611686018427387905",
  "-9223372036854775808",
  "18446744073709551616", // 2^64
  "18446744073709552000",
  "18446744073709551617", // 2^64 + 1
  "12345678901234567890",
  "12345678901234567000",
  "123456789012345680000",
  "999999999999999999999",
  "1000000000000000000000", // 1e21
  "99999999999999991611392", // 1e23, exactly
  "100000000000000000000000", // 1e23 as PostgreSQL writes it
  "-100000000000000000000000",
  "100000000000000000000001",
  (2n ** 1024n - 2n ** 971n).toString(), // the largest double, exactly
  jsonbText(Number.MAX_VALUE), // the largest double as PostgreSQL writes it (309 digits)
  `1${"0".repeat(309)}`, // 1e309: past every double, Infinity for JSON.parse
  `-1${"0".repeat(309)}`,
];

function integerLiteral(literal: string): Record<string, unknown> {
  const x = JSON.parse(literal) as number;
  if (!Number.isFinite(x)) return { literal, error: `must contain only finite numbers (found ${String(x)})` };
  const isDouble = BigInt(x) === BigInt(literal) || literal === String(x) || literal === jsonbText(x);
  if (!isDouble) return { literal, error: NOT_A_DOUBLE };
  return { literal, payloadCanonical: JSON.stringify(x), payloadJsonbText: jsonbText(x) };
}

const digestOf = (text: string) => createHash("sha256").update(text).digest().subarray(0, 8).toString("hex");
const roundTrip = roundTripPayloads.map(([name, payloadText]) => {
  const payload = JSON.parse(payloadText);
  const stored = jsonbText(payload);
  // PostgreSQL's text parses to the same doubles: the same texts again (test/conformance-round-trip.test.ts).
  if (jsonbText(JSON.parse(stored)) !== stored) throw new Error(`${name}: the jsonb text does not read back`);
  return {
    name,
    payloadText,
    payloadJsonbText: stored,
    payloadCanonical: canonical(payload),
    payloadDigest: digestOf(stored),
  };
});
// --- payloads as PostgreSQL gives them back (end) --------------------------------------------

// ---------------------------------------------------------------------------------------------

const secret = Buffer.from(SECRET_HEX, "hex");
const keys = new KeyRing(secret);
await keys.load(async () => ({ key_secret: null, legacy_ms: 0 }));

const hex = (b: Buffer) => b.toString("hex");
const paramValue = (v: unknown): unknown => (Buffer.isBuffer(v) ? `\\x${hex(v)}` : v);

/** Dates in the case's options as the TypeScript API takes them. */
function tsOptions(options: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!options) return undefined;
  const o: Record<string, unknown> = { ...options };
  for (const k of ["runAt", "deadline"]) if (typeof o[k] === "string") o[k] = new Date(o[k] as string);
  return o;
}

/**
 * The payload in a canonical text every client can write byte for byte: no whitespace, object keys
 * in jsonb's order (shorter UTF-8 first, then bytewise; a repeated key keeps its last value),
 * numbers as ECMAScript writes doubles, strings escaped as JSON.stringify escapes them.
 */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const keysSorted = Object.keys(v).sort((a, b) => {
      const ba = Buffer.from(a, "utf8");
      const bb = Buffer.from(b, "utf8");
      return ba.length - bb.length || Buffer.compare(ba, bb);
    });
    return `{${keysSorted.map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(",")}}`;
  }
  return JSON.stringify(v);
}

function expected(c: CaseDef): Record<string, unknown> {
  const payload = JSON.parse(c.input.payloadText);
  const maxPayloadBytes = c.input.maxPayloadBytes ?? LIMITS.defaultPayloadBytes;
  try {
    const n = normalizeRequest(c.input.type, payload, tsOptions(c.input.options), {
      maxPayloadBytes,
      source: null,
      keys,
    });
    const values = oneRequestValues(n, JOB_ID, false, true);
    const params: Record<string, unknown> = {};
    ENQUEUE_ONE_PARAMS.forEach((param, i) => {
      params[param.name] = paramValue(values[i]);
    });
    const k = n.keyed;
    let keyed: Record<string, unknown> | null = null;
    if (k) {
      // What PostgreSQL computes from the values it receives (workhorse.request_field_digests;
      // test/request-field-digests.test.ts checks every case against the server).
      const runAtIso = n.runAt ? n.runAt.toISOString() : null; // given runAt is never null: null = omitted
      const fieldDigests = fieldDigestsOf(
        {
          concurrencyKey: n.concurrencyKey,
          deadline: n.deadline?.toISOString() ?? null,
          executionTimeoutMs: n.executionTimeoutMs,
          maxAttempts: n.maxAttempts,
          queue: n.queue,
          retryPolicy: n.retryPolicy,
          runAt: runAtIso !== null ? runAtIso : { omitted: true },
          tags: n.tags,
          ttlMs: k.ttlMs,
          type: n.type,
        },
        payloadDigestOf(jsonbText(payload)),
      );
      const digests: Record<string, string> = {};
      FINGERPRINT_FIELDS.forEach((f, i) => {
        if (f !== "holdUntil") digests[f] = hex(fieldDigests.subarray(i * 8, i * 8 + 8));
      });
      // holdUntil's digest is appended by PostgreSQL (workhorse.hold_until_digest), only with a lifetime.
      const holdDigest = k.holdUntil
        ? createHash("sha256").update(JSON.stringify(k.holdUntil)).digest().subarray(0, 8)
        : Buffer.alloc(0);
      keyed = {
        mode: k.mode,
        scope: k.key.scope,
        keyHash: hex(k.key.keyHash),
        legacyKeyHash: hex(
          legacyKeyHash(k.key.scope, (c.input.options as Record<string, { key: string }>)[k.mode]!.key),
        ),
        keyDigest: k.key.keyDigest,
        keyPreview: k.key.keyPreview,
        keyLength: k.key.keyLength,
        ttlMs: k.ttlMs,
        schedule: k.schedule,
        maxWaitMs: k.maxWaitMs,
        holdUntil: k.holdUntil,
        fieldDigests: hex(fieldDigests),
        fieldDigestsByName: digests,
        holdUntilDigest: k.holdUntil ? hex(holdDigest) : null,
        requestDigest: hex(
          createHash("sha256")
            .update(Buffer.concat([fieldDigests, holdDigest]))
            .digest(),
        ),
      };
    }
    return {
      ok: {
        payloadCanonical: canonical(payload),
        payloadJson: n.payloadJson,
        payloadJsonbText: jsonbText(payload),
        payloadDigest: payloadDigestOf(jsonbText(payload)),
        payloadBytes: encodePayload(payload, maxPayloadBytes).bytes,
        type: n.type,
        queue: n.queue,
        runAt: n.runAt?.toISOString() ?? null,
        deadline: n.deadline?.toISOString() ?? null,
        maxAttempts: n.maxAttempts,
        retryPolicy: n.retryPolicy,
        executionTimeoutMs: n.executionTimeoutMs,
        concurrencyKey: n.concurrencyKey,
        tags: n.tags,
        source: n.source,
        keyed,
        enqueueOneParams: params,
        // Only a request with a key lifetime sends it, after p_trace_context (null).
        ...(k?.holdUntil ? { holdUntilParam: { name: ENQUEUE_HOLD_PARAM.name, value: k.holdUntil } } : {}),
      },
    };
  } catch (err) {
    if (!(err instanceof EnqueueValidationError)) throw err;
    return {
      error: {
        issues: err.issues.map((i) => ({ option: i.option, rule: i.rule, ...(i.path ? { path: i.path } : {}) })),
      },
    };
  }
}

/**
 * The distributed layout's bucket of a keyed request (docs/scale-out.md) and the job id carrying
 * it, for keys hashed with this file's secret: every client must place a keyed job in the same
 * bucket, or a replay from another language would look in the wrong shard.
 */
const buckets = [
  ["default", "k1"],
  ["invoice-capture", "capture:INV-42"],
  ["café ☕", "clé-🔑"],
  ["s".repeat(256), "k".repeat(512)],
  ["x", ""],
].map(([scope, key]) => {
  const keyHash = keys.hash(scope as string, key as string);
  const bucket = keyBucket(scope as string, keyHash);
  return { scope, keyHashHex: keyHash.toString("hex"), bucket, bucketedJobId: bucketedId(JOB_ID, bucket) };
});

const file = {
  description:
    "Enqueue conformance cases for Workhorse clients in other languages, generated by scripts/conformance.ts " +
    "from the TypeScript core. Do not edit by hand. docs/clients.md explains every field.",
  secretHex: SECRET_HEX,
  jobId: JOB_ID,
  fingerprintFields: FINGERPRINT_FIELDS,
  enqueueOneParams: ENQUEUE_ONE_PARAMS,
  limits: LIMITS,
  cases: cases.map((c) => ({ ...c, expect: expected(c) })),
  buckets,
  roundTrip,
  integerLiterals: integerLiterals.map(integerLiteral),
  // The worker's SQL functions: each call's argument types in order and the result columns a client
  // may select (lib/store/worker/calls.ts, checked against pg_proc).
  workerCalls: Object.entries(WORKER_FUNCTIONS).map(([fn, f]) => ({ function: `workhorse.${fn}`, ...f })),
};
// Written as the repository's formatter writes JSON, so `biome check` and `--check` agree.
const text = execFileSync(
  new URL("../node_modules/.bin/biome", import.meta.url).pathname,
  ["format", "--stdin-file-path=sdk/conformance/enqueue.json"],
  { input: JSON.stringify(file, null, 2), encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
);

const checked = writeOrCheck(
  OUT,
  text,
  "sdk/conformance/enqueue.json is out of date: run npx tsx scripts/conformance.ts",
);
console.log(
  checked
    ? `sdk/conformance/enqueue.json is current (${cases.length} cases)`
    : `wrote sdk/conformance/enqueue.json (${cases.length} cases)`,
);
