import type { NextRequest } from "next/server";
import { jsonRead } from "@/lib/console/reads/api";
import { parseSeriesParams } from "@/lib/console/reads/filters";
import { series } from "@/lib/console/reads/series";

export const dynamic = "force-dynamic";

export function GET(req: NextRequest) {
  const p = parseSeriesParams(req.nextUrl.searchParams);
  return jsonRead((db) => series(db, p.window, p.queue));
}
