import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { SignInForm } from "@/components/sign-in-form";
import { Notice } from "@/components/ui";
import { safeReturnPath } from "@/lib/console/auth/return-to";
import { currentViewer } from "@/lib/console/auth/viewer";
import { signIn } from "./actions";

export const metadata: Metadata = { title: "Sign in" };
export const dynamic = "force-dynamic";

export default async function SignInPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[]>>;
}) {
  const sp = await searchParams;
  const next = safeReturnPath(Array.isArray(sp.next) ? sp.next[0] : sp.next);
  const r = await currentViewer();
  if (r.status === "ok") redirect(next ?? "/");
  return (
    <main className="mx-auto flex min-h-screen max-w-sm flex-col justify-center px-4 py-10">
      <h1 className="mb-1 text-2xl font-semibold text-slate-900">Workhorse console</h1>
      <p className="mb-6 text-sm text-slate-600">Sign in to browse jobs, keys and conflicts.</p>
      {r.status === "forbidden" ? (
        <Notice tone="error" role="alert">
          {r.message}
        </Notice>
      ) : (
        <SignInForm next={next} action={signIn} />
      )}
    </main>
  );
}
