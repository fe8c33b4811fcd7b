import type { NextRequest } from "next/server";
import { jsonRead } from "@/lib/console/reads/api";
import { parseJobFilters } from "@/lib/console/reads/filters";
import { listJobs } from "@/lib/console/reads/jobs";

export const dynamic = "force-dynamic";

export function GET(req: NextRequest) {
  const filters = parseJobFilters(req.nextUrl.searchParams);
  return jsonRead((db) => listJobs(db, filters));
}
