/**
 * Payloads and other values headed for `jsonb`: what JSON would store unchanged, and how many bytes
 * PostgreSQL will store for it (docs/enqueue.md, input rules).
 */
import { EnqueueValidationError } from "./errors";
import { LIMITS } from "./limits";
import { jsonbText, utf8Bytes } from "./payload-text";

/**
 * How many more characters PostgreSQL's numeric form of `v` has than JavaScript's: jsonb writes
 * numbers without exponents, so `1e+21` is 22 digits and `-1e-7` is `-0.0000001` (10 characters for 5).
 */
function numericExpansion(v: number): number {
  const js = String(v);
  const e = js.indexOf("e");
  if (e < 0) return 0;
  const sign = v < 0 ? 1 : 0;
  // The mantissa's digits (at most 17, one before the point); JavaScript uses exponents only below
  // 1e-6 and from 1e21, so a positive exponent always exceeds the digits after the point.
  const digits = e - sign - (js.indexOf(".") < 0 ? 0 : 1);
  const exp = Number(js.slice(e + 1));
  const plain = sign + (exp >= 0 ? exp + 1 : 2 - exp - 1 + digits);
  return plain - js.length;
}

/**
 * Why JSON.stringify would store something other than `v` without a word: a Map or Set becomes `{}`,
 * a typed array an object of indices, an array hole `null`. Null when `v` serialises faithfully.
 */
function silentlyChanged(v: object): string | null {
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      if (!(i in v)) return `an array has a hole at index ${i} (JSON would store null there)`;
      if (v[i] === undefined) return `an array holds undefined at index ${i} (JSON would store null there)`;
    }
    return null;
  }
  if (v instanceof Map || v instanceof WeakMap)
    return "a Map would be stored as {} (convert it with Object.fromEntries)";
  if (v instanceof Set || v instanceof WeakSet) return "a Set would be stored as {} (convert it to an array)";
  if (ArrayBuffer.isView(v) || v instanceof ArrayBuffer)
    return "a typed array or buffer would be stored as an object of indices (convert it to an array or a string)";
  if (v instanceof RegExp || v instanceof Error || v instanceof Promise)
    return `a ${v.constructor.name} would be stored as {} (send its fields as plain values)`;
  return null;
}

/**
 * JSON text for a handler's result, a checkpoint value or an audit entry: JSON's own conversions
 * apply (a Date becomes a string, `toJSON` is called, properties holding `undefined` are left out),
 * but nothing jsonb cannot store or JSON would silently lose: no undefined at the top, no BigInt,
 * functions, symbols or cycles, only finite numbers, well-formed strings without NUL, no Map, Set,
 * typed arrays or array holes (see `silentlyChanged`), and at most `maxBytes` UTF-8 bytes encoded.
 * Payloads have stricter rules: `encodePayload`.
 */
export function serializePayload(payload: unknown, maxBytes: number, option = "payload"): string {
  const fail = (rule: string): never => {
    throw new EnqueueValidationError([{ option, rule }]);
  };
  // PostgreSQL stores numbers as numeric and writes them without exponents (1e308 is 309 digits),
  // so the limit counts what PostgreSQL will store and hash, not JavaScript's short form.
  let expansion = 0;
  if (payload === undefined) fail("must be JSON-serialisable: undefined is not a JSON value (use null or {})");
  let text: string | undefined;
  try {
    text = JSON.stringify(payload, function (this: unknown, k: string, v: unknown) {
      if (!k.isWellFormed() || k.includes("\u0000"))
        fail(`has a key that PostgreSQL cannot store (NUL or lone surrogate)`);
      switch (typeof v) {
        case "number":
          if (!Number.isFinite(v)) fail(`must contain only finite numbers (found ${String(v)})`);
          expansion += numericExpansion(v);
          break;
        case "string":
          if (!v.isWellFormed() || v.includes("\u0000"))
            fail("has a string that PostgreSQL jsonb cannot store (NUL character or lone surrogate)");
          break;
        case "bigint":
          fail("must be JSON-serialisable: BigInt is not a JSON value (send it as a string)");
          break;
        case "function":
        case "symbol":
          fail(`must be JSON-serialisable: found a ${typeof v}`);
          break;
        case "object":
          if (v !== null) {
            const changed = silentlyChanged(v);
            if (changed) fail(`must be plain JSON: ${changed}`);
          }
          break;
      }
      return v;
    });
  } catch (err) {
    if (err instanceof EnqueueValidationError) throw err;
    fail(`must be JSON-serialisable: ${(err as Error).message.split("\n")[0]}`);
  }
  if (text === undefined) return fail("must be JSON-serialisable");
  const bytes = utf8Bytes(text) + expansion;
  if (bytes > maxBytes) fail(`must be at most ${maxBytes} bytes encoded as JSON (got ${bytes})`);
  return text;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
// Characters JSON.stringify writes as escapes: `"`, `\` and C0 controls.
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it looks for
const NEEDS_ESCAPE = /["\\\u0000-\u001f]/;
const MAX_PATH_CHARS = 2000;

/** A JSON path in `payloadPaths` syntax: `$.a`, `$[0]`, `$["not an identifier"]`. */
function jsonPath(steps: ReadonlyArray<string | number>): string {
  let out = "$";
  for (const s of steps) {
    out += typeof s === "number" ? `[${s}]` : IDENTIFIER.test(s) ? `.${s}` : `[${JSON.stringify(s)}]`;
    if (out.length > MAX_PATH_CHARS) return `${out.slice(0, MAX_PATH_CHARS - 1)}…`;
  }
  return out;
}

/**
 * The UTF-16 length JSON.stringify gives `s` (quotes and escapes included), or -1 when PostgreSQL
 * cannot store it (NUL, lone surrogates).
 */
function jsonStringUnits(s: string): number {
  if (!s.isWellFormed()) return -1;
  if (!NEEDS_ESCAPE.test(s)) return s.length + 2;
  let units = s.length + 2;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0) return -1;
    if (c === 0x22 || c === 0x5c || c === 8 || c === 9 || c === 10 || c === 12 || c === 13) units += 1;
    else if (c < 0x20) units += 5;
  }
  return units;
}

/** Why an object that is neither a plain object nor an array is refused. */
function notPlain(v: object): string {
  if (v instanceof Date) {
    return Number.isNaN(v.getTime())
      ? "an invalid Date would be stored as null"
      : "a Date would be stored as a string; send date.toISOString() (or epoch milliseconds) instead";
  }
  if (v instanceof Number || v instanceof String || v instanceof Boolean) {
    return `a boxed ${v.constructor.name} would be stored as a plain ${typeof v.valueOf()}; send the primitive`;
  }
  const changed = silentlyChanged(v);
  if (changed) return changed;
  const name = typeof v.constructor === "function" && v.constructor.name ? v.constructor.name : "a class";
  if (typeof (v as { toJSON?: unknown }).toJSON === "function") {
    return `an instance of ${name} has toJSON: JSON would store what toJSON returns; send that value instead`;
  }
  return `an instance of ${name} would be stored as a plain object without its class; send a plain object`;
}

/** A payload as sent to PostgreSQL: its JSON text and the bytes PostgreSQL stores for it. */
interface EncodedPayload {
  text: string;
  /** `octet_length(payload::jsonb::text)`: what the size limit counts. */
  bytes: number;
}

/**
 * Checks a payload and returns its JSON text. A payload is JSON that survives a round trip
 * unchanged (docs/enqueue.md, input rules): plain objects (prototype `Object.prototype` or null)
 * and arrays, nested at most `LIMITS.maxPayloadDepth` levels, holding strings (well-formed, no
 * NUL), finite numbers, booleans and null. Refused, with the JSON path where it was found: undefined
 * (anywhere: JSON would drop a property or store null), Dates (valid or not), boxed primitives,
 * class instances, anything with `toJSON`, symbol-keyed properties, Map, Set, typed arrays, array
 * holes, BigInt, functions, symbols and cycles. The size is what PostgreSQL stores, the jsonb text
 * form (a space after every `:` and `,`, numbers without exponents), at most `maxBytes`.
 *
 * One iterative walk (no recursion, so any depth is a validation error rather than a stack
 * overflow) checks everything, and stops as soon as the text is sure to exceed `maxBytes` (a value
 * shared many times over cannot make it walk for long). The text is then, by `form`:
 *   "json": JSON.stringify's (insertion order); the size is its UTF-8 length plus what PostgreSQL adds;
 *   "jsonb": PostgreSQL's own jsonb text (payload-text.ts), which keyed requests send so that the
 *   payload digest they compute is the digest of exactly what is stored; the size is its UTF-8 length.
 * Properties are read as JSON reads them (own, enumerable, string-keyed); a getter is read twice, by
 * the walk and by the writing of the text.
 */
export function encodePayload(
  payload: unknown,
  maxBytes: number,
  option = "payload",
  form: "json" | "jsonb" = "json",
): EncodedPayload {
  try {
    return walkPayload(payload, maxBytes, option, form);
  } catch (err) {
    if (err instanceof EnqueueValidationError) throw err;
    // A getter or proxy trap that throws.
    throw new EnqueueValidationError([
      { option, rule: `could not be read: ${String((err as Error)?.message ?? err).split("\n")[0]}` },
    ]);
  }
}

function walkPayload(payload: unknown, maxBytes: number, option: string, form: "json" | "jsonb"): EncodedPayload {
  // The open containers, innermost last: the container, its keys (null for an array), the next
  // index to visit. Parallel arrays, so a step allocates nothing.
  const containers: object[] = [];
  const keyLists: Array<readonly string[] | null> = [];
  const nextIndex: number[] = [];
  let units = 0; // at most the UTF-16 length of JSON.stringify's text (so at most its UTF-8 bytes)
  let extra = 0; // what PostgreSQL's text adds: spaces after `:` and `,`, digits of exponents
  let value: unknown = payload;
  let step: string | number | null = null; // where `value` sits in the innermost container

  // The path to the value reached through the first `depth` open containers.
  const pathTo = (depth = containers.length): string => {
    const steps: Array<string | number> = [];
    for (let j = 0; j < depth; j++) {
      const keys = keyLists[j];
      const at = (nextIndex[j] as number) - 1;
      steps.push(keys ? String(keys[at]) : at);
    }
    return jsonPath(steps);
  };
  const fail = (rule: string, path = pathTo()): never => {
    throw new EnqueueValidationError([{ option, rule: `${rule} (at ${path})`, path }]);
  };

  for (;;) {
    switch (typeof value) {
      case "string": {
        const u = jsonStringUnits(value);
        if (u < 0) fail("has a string that PostgreSQL jsonb cannot store (NUL character or lone surrogate)");
        units += u;
        break;
      }
      case "number":
        if (!Number.isFinite(value)) fail(`must contain only finite numbers (found ${String(value)})`);
        units += 1; // at least: the exact text is JSON.stringify's, measured at the end
        // Only exponent forms (below 1e-6, from 1e21) grow in PostgreSQL; formatting the others costs.
        if (value !== 0 && (value >= 1e21 || value <= -1e21 || (value < 1e-6 && value > -1e-6))) {
          extra += numericExpansion(value);
        }
        break;
      case "boolean":
        units += value ? 4 : 5;
        break;
      case "undefined":
        if (containers.length === 0) fail("must be JSON-serialisable: undefined is not a JSON value (use null or {})");
        if (typeof step === "number")
          fail(`must be plain JSON: an array holds undefined at index ${step} (JSON would store null there)`);
        fail("must be plain JSON: a property holds undefined, which JSON leaves out; omit the property or use null");
        break;
      case "bigint":
        fail("must be JSON-serialisable: BigInt is not a JSON value (send it as a string)");
        break;
      case "function":
        if (step === "toJSON")
          fail(
            "must be plain JSON: an object has a toJSON method, so JSON would store what it returns; send that value instead",
            pathTo(containers.length - 1),
          );
        fail("must be JSON-serialisable: found a function");
        break;
      case "symbol":
        fail("must be JSON-serialisable: found a symbol");
        break;
      case "object": {
        if (value === null) {
          units += 4;
          break;
        }
        let keys: readonly string[] | null = null;
        let count: number;
        if (Array.isArray(value)) {
          count = value.length;
        } else {
          const proto = Object.getPrototypeOf(value);
          if (proto !== Object.prototype && proto !== null) fail(`must be plain JSON: ${notPlain(value)}`);
          keys = Object.keys(value);
          count = keys.length;
          if (Object.getOwnPropertySymbols(value).length > 0) {
            fail("must be plain JSON: an object has a symbol-keyed property, which JSON leaves out");
          }
          extra += count; // the space after each `:`
        }
        if (containers.length >= LIMITS.maxPayloadDepth) {
          // A cycle is found here too: it would nest forever. Name the first repeated object.
          for (let i = 1; i < containers.length; i++) {
            if (containers.indexOf(containers[i] as object) < i) {
              fail("must be JSON-serialisable: it has a cycle (an object that contains itself)", pathTo(i));
            }
          }
          if (containers.includes(value))
            fail("must be JSON-serialisable: it has a cycle (an object that contains itself)");
          fail(`must be nested at most ${LIMITS.maxPayloadDepth} levels deep (objects and arrays)`);
        }
        units += count > 0 ? count + 1 : 2; // brackets and commas
        extra += count > 1 ? count - 1 : 0; // the space after each `,`
        containers.push(value);
        keyLists.push(keys);
        nextIndex.push(0);
        break;
      }
    }
    if (units + extra > maxBytes) {
      // Every UTF-16 unit is at least one UTF-8 byte: already over, whatever the rest holds.
      throw new EnqueueValidationError([
        { option, rule: `must be at most ${maxBytes} bytes as PostgreSQL stores it (jsonb text; this one is larger)` },
      ]);
    }
    // The next value: the innermost container's next member, closing finished containers.
    let found = false;
    while (containers.length > 0) {
      const top = containers.length - 1;
      const container = containers[top] as Record<string, unknown> & unknown[];
      const keys = keyLists[top] ?? null;
      const i = nextIndex[top] as number;
      if (keys === null) {
        if (i < container.length) {
          nextIndex[top] = i + 1;
          step = i;
          value = container[i];
          if (value === undefined && !(i in container)) {
            fail(`must be plain JSON: an array has a hole at index ${i} (JSON would store null there)`);
          }
          found = true;
          break;
        }
      } else if (i < keys.length) {
        nextIndex[top] = i + 1;
        const key = keys[i] as string;
        step = key;
        const ku = jsonStringUnits(key);
        if (ku < 0) fail("has a key that PostgreSQL cannot store (NUL or lone surrogate)");
        units += ku + 1; // the key and its `:`
        value = container[key];
        found = true;
        break;
      }
      containers.pop();
      keyLists.pop();
      nextIndex.pop();
    }
    if (!found) break;
  }
  const text = form === "jsonb" ? jsonbText(payload) : JSON.stringify(payload);
  const bytes = form === "jsonb" ? utf8Bytes(text) : utf8Bytes(text) + extra;
  if (bytes > maxBytes) {
    throw new EnqueueValidationError([
      { option, rule: `must be at most ${maxBytes} bytes as PostgreSQL stores it (jsonb text; got ${bytes})` },
    ]);
  }
  return { text, bytes };
}
