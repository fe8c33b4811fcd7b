"use server";
import { LIMITS } from "@workhorse/core";
import { redirect } from "next/navigation";
import { z } from "zod";
import { signInLimiter } from "@/lib/console/auth/rate-limit";
import { safeReturnPath } from "@/lib/console/auth/return-to";
import { createSession, deleteSession, lookupSession, passwordFingerprint } from "@/lib/console/auth/session-store";
import { getSession, requestInfo, sameOriginRequest } from "@/lib/console/auth/viewer";
import { consoleConfig, passwordMatches } from "@/lib/console/databases/config";
import { primaryDb } from "@/lib/console/databases/db";
import type { SignInState } from "@/lib/console/wire/action-state";

/** The name typed, given back after a failed sign-in so it need not be typed again. */
function actorOf(data: FormData): string {
  const v = data.get("actor");
  return typeof v === "string" ? v.slice(0, LIMITS.actorChars) : "";
}

const form = z.object({
  actor: z
    .string()
    .trim()
    .min(1, { error: "Enter your name: it is recorded in the audit log" })
    .max(LIMITS.actorChars, { error: `At most ${LIMITS.actorChars} characters` })
    .regex(/^[^\p{Cc}]+$/u, { error: "No control characters" }),
  password: z.string().min(1, { error: "Enter the password" }).max(1024),
});

export async function signIn(_prev: SignInState, data: FormData): Promise<SignInState> {
  const cfg = consoleConfig();
  const next = safeReturnPath(data.get("next")) ?? "/";
  if (!cfg.password) redirect(next);
  if (!(await sameOriginRequest())) {
    return { status: "error", message: "Sign-in is accepted from this console's own page only.", fieldErrors: {} };
  }
  const parsed = form.safeParse({ actor: data.get("actor") ?? "", password: data.get("password") ?? "" });
  if (!parsed.success) {
    const fieldErrors: Record<string, string> = {};
    for (const i of parsed.error.issues) fieldErrors[String(i.path[0])] ??= i.message;
    return { status: "error", message: "Check the highlighted fields.", fieldErrors, actor: actorOf(data) };
  }
  // Keyed on the address the server saw on the socket (or a trusted proxy's report), never on a
  // header the client chose.
  const { clientAddress } = await requestInfo();
  const verdict = signInLimiter.check(clientAddress, parsed.data.actor);
  if (verdict.refuseMs > 0) {
    return {
      status: "error",
      message: `Too many failed sign-ins from your address. Try again in ${Math.ceil(verdict.refuseMs / 1000)} seconds.`,
      fieldErrors: {},
    };
  }
  if (verdict.delayMs > 0) await new Promise((r) => setTimeout(r, verdict.delayMs));
  if (!passwordMatches(cfg.password, parsed.data.password)) {
    signInLimiter.fail(clientAddress, parsed.data.actor);
    await new Promise((r) => setTimeout(r, 250));
    return {
      status: "error",
      message: "Wrong password.",
      fieldErrors: { password: "Wrong password" },
      actor: parsed.data.actor,
    };
  }
  signInLimiter.succeed(clientAddress);
  const { pool, queue } = primaryDb();
  const { id } = await createSession(pool, {
    actor: parsed.data.actor,
    fingerprint: passwordFingerprint(cfg.password, cfg.sessionSecret),
    clientAddress,
  });
  await queue.recordOperatorAction({
    actor: parsed.data.actor,
    action: "sign_in",
    target: "console",
    result: { status: "ok", clientAddress },
  });
  const session = await getSession();
  if (session.sid) await deleteSession(pool, session.sid);
  session.sid = id;
  await session.save();
  redirect(next);
}

/** Ends this session on the server (its row is deleted, so a copy of the cookie stops working too). */
export async function signOut(): Promise<void> {
  const session = await getSession();
  if (session.sid && (await sameOriginRequest())) {
    const { pool, queue } = primaryDb();
    const cfg = consoleConfig();
    const row = cfg.password
      ? await lookupSession(pool, session.sid, passwordFingerprint(cfg.password, cfg.sessionSecret))
      : null;
    if (await deleteSession(pool, session.sid)) {
      await queue.recordOperatorAction({
        actor: row?.actor ?? "unknown",
        action: "sign_out",
        target: "console",
        result: { status: "ok" },
      });
    }
  }
  session.destroy();
  redirect("/sign-in");
}
