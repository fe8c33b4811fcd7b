import type { ReactNode } from "react";
import { ConsoleShell } from "@/app/console-shell";

export const dynamic = "force-dynamic";

/** Pages over every configured database (the fleet page). */
export default function GlobalLayout({ children }: { children: ReactNode }) {
  return <ConsoleShell fleet>{children}</ConsoleShell>;
}
