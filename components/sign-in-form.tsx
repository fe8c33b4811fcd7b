"use client";
import { useActionState } from "react";
import type { SignInState } from "@/lib/console/wire/action-state";
import { buttonClass, Field, inputClass, Notice } from "./ui";

/** `action`: the sign-in server action, passed down by the page (components never import from app/). */
export function SignInForm({
  next,
  action: signIn,
}: {
  next: string | null;
  action: (prev: SignInState, data: FormData) => Promise<SignInState>;
}) {
  const [state, action, pending] = useActionState<SignInState, FormData>(signIn, { status: "idle" });
  const errors = state.status === "error" ? state.fieldErrors : {};
  return (
    <form action={action} className="space-y-4 rounded-lg border border-slate-200 bg-white p-5 shadow-sm">
      {state.status === "error" ? (
        <Notice tone="error" role="alert">
          {state.message}
        </Notice>
      ) : null}
      {next ? <input type="hidden" name="next" value={next} /> : null}
      <Field label="Your name" name="actor" error={errors.actor} hint="Recorded as the actor of what you do here.">
        <input
          id="actor"
          name="actor"
          key={state.status === "error" ? `${state.actor}` : "idle"}
          defaultValue={state.status === "error" ? state.actor : undefined}
          autoComplete="username"
          required
          className={inputClass}
          aria-invalid={!!errors.actor}
        />
      </Field>
      <Field label="Password" name="password" error={errors.password}>
        <input
          id="password"
          name="password"
          type="password"
          autoComplete="current-password"
          required
          className={inputClass}
          aria-invalid={!!errors.password}
        />
      </Field>
      <button type="submit" className={`${buttonClass} w-full`} disabled={pending}>
        {pending ? "Signing in…" : "Sign in"}
      </button>
    </form>
  );
}
