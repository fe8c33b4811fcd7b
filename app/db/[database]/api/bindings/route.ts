import type { NextRequest } from "next/server";
import { jsonRead } from "@/lib/console/reads/api";
import { listBindings } from "@/lib/console/reads/bindings";
import { parseBindingFilters } from "@/lib/console/reads/filters";

export const dynamic = "force-dynamic";

export function GET(req: NextRequest) {
  const filters = parseBindingFilters(req.nextUrl.searchParams);
  return jsonRead((db) => listBindings(db, filters));
}
