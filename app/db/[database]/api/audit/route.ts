import type { NextRequest } from "next/server";
import { jsonRead } from "@/lib/console/reads/api";
import { listAudit } from "@/lib/console/reads/audit";
import { parseAuditFilters } from "@/lib/console/reads/filters";

export const dynamic = "force-dynamic";

export function GET(req: NextRequest) {
  const filters = parseAuditFilters(req.nextUrl.searchParams);
  return jsonRead((db) => listAudit(db, filters));
}
