"use server";
import { headers } from "next/headers";
import { redirect } from "next/navigation";
import { z } from "zod";
import type { SignInState } from "@/lib/console/action-state";
import { consoleConfig, passwordMatches } from "@/lib/console/config";
import { signInLimiter } from "@/lib/console/rate-limit";
import { safeReturnPath } from "@/lib/console/return-to";
import { getSession, sameOrigin } from "@/lib/console/session";

/** The name typed, given back after a failed sign-in so it need not be typed again. */
function actorOf(data: FormData): string {
  const v = data.get("actor");
  return typeof v === "string" ? v.slice(0, 100) : "";
}

const form = z.object({
  actor: z
    .string()
    .trim()
    .min(1, { error: "Enter your name: it is recorded in the audit log" })
    .max(100, { error: "At most 100 characters" })
    .regex(/^[^\p{Cc}]+$/u, { error: "No control characters" }),
  password: z.string().min(1, { error: "Enter the password" }).max(1024),
});

export async function signIn(_prev: SignInState, data: FormData): Promise<SignInState> {
  const cfg = consoleConfig();
  const next = safeReturnPath(data.get("next")) ?? "/";
  if (!cfg.password) redirect(next);
  const h = await headers();
  if (!sameOrigin(h.get("origin"), h.get("x-forwarded-host") ?? h.get("host"))) {
    return { status: "error", message: "Sign-in is accepted from this console's own page only.", fieldErrors: {} };
  }
  const client = h.get("x-forwarded-for")?.split(",")[0]?.trim() || h.get("x-real-ip") || "unknown";
  const wait = signInLimiter.retryAfterMs(client);
  if (wait > 0) {
    return {
      status: "error",
      message: `Too many failed sign-ins. Try again in ${Math.ceil(wait / 1000)} seconds.`,
      fieldErrors: {},
    };
  }
  const parsed = form.safeParse({ actor: data.get("actor") ?? "", password: data.get("password") ?? "" });
  if (!parsed.success) {
    const fieldErrors: Record<string, string> = {};
    for (const i of parsed.error.issues) fieldErrors[String(i.path[0])] ??= i.message;
    return { status: "error", message: "Check the highlighted fields.", fieldErrors, actor: actorOf(data) };
  }
  if (!passwordMatches(cfg.password, parsed.data.password)) {
    signInLimiter.fail(client);
    await new Promise((r) => setTimeout(r, 250));
    return {
      status: "error",
      message: "Wrong password.",
      fieldErrors: { password: "Wrong password" },
      actor: parsed.data.actor,
    };
  }
  signInLimiter.succeed(client);
  const session = await getSession();
  session.actor = parsed.data.actor;
  session.signedInAt = Date.now();
  await session.save();
  redirect(next);
}

export async function signOut(): Promise<void> {
  const session = await getSession();
  session.destroy();
  redirect("/sign-in");
}
