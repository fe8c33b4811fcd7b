import type { NextRequest } from "next/server";
import { jsonRead } from "@/lib/console/api";
import { listBindings } from "@/lib/console/bindings";
import { parseBindingFilters } from "@/lib/console/filters";

export const dynamic = "force-dynamic";

export function GET(req: NextRequest) {
  const filters = parseBindingFilters(req.nextUrl.searchParams);
  return jsonRead((db) => listBindings(db, filters));
}
