import type { NextRequest } from "next/server";
import { jsonRead } from "@/lib/console/api";
import { parseSeriesParams } from "@/lib/console/filters";
import { series } from "@/lib/console/series";

export const dynamic = "force-dynamic";

export function GET(req: NextRequest) {
  const p = parseSeriesParams(req.nextUrl.searchParams);
  return jsonRead((db) => series(db, p.window, p.queue));
}
