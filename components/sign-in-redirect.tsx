"use client";
import Link from "next/link";
import { useEffect } from "react";
import { signInHref } from "@/lib/console/return-to";

/**
 * Shown by the console layout to a signed-out visitor: sends them to sign-in, which brings them back
 * to this very page (path and query) afterwards. The server cannot see the requested path in a
 * layout, the browser can.
 */
export function SignInRedirect() {
  useEffect(() => {
    window.location.replace(signInHref(`${window.location.pathname}${window.location.search}`));
  }, []);
  return (
    <main className="mx-auto max-w-sm px-4 py-16 text-center">
      <p className="text-slate-900">
        Sign in to see this page.{" "}
        <Link className="text-blue-700 underline" href="/sign-in">
          Sign in
        </Link>
      </p>
    </main>
  );
}
