import type { NextRequest } from "next/server";
import { jsonRead } from "@/lib/console/reads/api";
import { parseObservationFilters } from "@/lib/console/reads/filters";
import { listObservations } from "@/lib/console/reads/observation-reads";

export const dynamic = "force-dynamic";

export function GET(req: NextRequest) {
  const filters = parseObservationFilters(req.nextUrl.searchParams);
  return jsonRead((db) => listObservations(db, filters));
}
