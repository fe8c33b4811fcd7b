/**
 * A checked payload in PostgreSQL's jsonb text form, written by the process: the text whose digest
 * is the payload's fingerprint digest (docs/enqueue.md, "The payload digest"). PostgreSQL writes a
 * jsonb value as: object keys shorter-first in UTF-8 bytes, then bytewise; `": "` after a key and
 * `", "` between members and elements; numbers without exponents (`1e+21` is 22 digits, `1.5e-7` is
 * `0.00000015`); strings escaped as `JSON.stringify` escapes them. Parsing this text gives the same
 * jsonb, and `jsonb::text` gives this text back, byte for byte (test/payload-text.test.ts checks it
 * against the server).
 */

/** UTF-8 length of `s` in bytes. */
export const utf8Bytes = (s: string) => Buffer.byteLength(s, "utf8");

/** `s` with no exponent: JavaScript's shortest digits of a double, written as numeric writes them. */
export function plainNumber(n: number): string {
  const s = String(n);
  const e = s.indexOf("e");
  if (e < 0) return s;
  const negative = s.charCodeAt(0) === 0x2d;
  const mantissa = s.slice(negative ? 1 : 0, e);
  const exp = Number(s.slice(e + 1));
  const dot = mantissa.indexOf(".");
  const digits = dot < 0 ? mantissa : mantissa.slice(0, dot) + mantissa.slice(dot + 1);
  const point = (dot < 0 ? mantissa.length : dot) + exp; // digits before the decimal point
  let out: string;
  if (point <= 0) out = `0.${"0".repeat(-point)}${digits}`;
  else if (point >= digits.length) out = digits + "0".repeat(point - digits.length);
  else out = `${digits.slice(0, point)}.${digits.slice(point)}`;
  return negative ? `-${out}` : out;
}

/** UTF-8 length of `s` when every character is ASCII, else -1. */
function asciiLength(s: string): number {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return -1;
  return s.length;
}

/** jsonb's key order: shorter UTF-8 first, then bytewise. */
function keyOrder(a: string, b: string): number {
  const la = asciiLength(a);
  const lb = asciiLength(b);
  if (la >= 0 && lb >= 0) {
    if (la !== lb) return la - lb;
    return a < b ? -1 : a > b ? 1 : 0;
  }
  const x = Buffer.from(a, "utf8");
  const y = Buffer.from(b, "utf8");
  return x.length !== y.length ? x.length - y.length : Buffer.compare(x, y);
}

/** Sorts `keys` in place in jsonb's order; an insertion sort for the few keys objects usually have. */
function sortKeys(keys: string[]): void {
  if (keys.length > 12) {
    keys.sort(keyOrder);
    return;
  }
  for (let i = 1; i < keys.length; i++) {
    const k = keys[i] as string;
    let j = i - 1;
    while (j >= 0 && keyOrder(keys[j] as string, k) > 0) {
      keys[j + 1] = keys[j] as string;
      j--;
    }
    keys[j + 1] = k;
  }
}

/**
 * The jsonb text of a payload `encodePayload` accepted (plain objects and arrays at most 100 deep,
 * well-formed strings without NUL, finite numbers, booleans, null). Properties are read as JSON
 * reads them: own, enumerable, string-keyed.
 */
export function jsonbText(v: unknown): string {
  switch (typeof v) {
    case "string":
      return JSON.stringify(v);
    case "number":
      return plainNumber(v);
    case "boolean":
      return v ? "true" : "false";
    default: {
      if (v === null) return "null";
      if (Array.isArray(v)) {
        let out = "[";
        for (let i = 0; i < v.length; i++) out += (i ? ", " : "") + jsonbText(v[i]);
        return `${out}]`;
      }
      const o = v as Record<string, unknown>;
      const keys = Object.keys(o);
      if (keys.length > 1) sortKeys(keys);
      let out = "{";
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i] as string;
        out += `${i ? ", " : ""}${JSON.stringify(k)}: ${jsonbText(o[k])}`;
      }
      return `${out}}`;
    }
  }
}
