import type { ReactNode } from "react";
import { ConsoleShell } from "@/app/console-shell";

export const dynamic = "force-dynamic";

/** Every page of one database (`/db/<name>/…`; proxy.ts serves a URL naming none as the first database's). */
export default function DatabaseLayout({ children }: { children: ReactNode }) {
  return <ConsoleShell fleet={false}>{children}</ConsoleShell>;
}
