import type { NextRequest } from "next/server";
import { jsonRead } from "@/lib/console/reads/api";
import { parseQueueName } from "@/lib/console/reads/filters";
import { queueHealth } from "@/lib/console/reads/queues";

export const dynamic = "force-dynamic";

/** Every queue's health, or one queue's with `?queue=`. */
export function GET(req: NextRequest) {
  const raw = req.nextUrl.searchParams.get("queue");
  const queue = raw === null ? undefined : (parseQueueName(raw) ?? "");
  if (queue === "") return Response.json({ error: "Not a queue name." }, { status: 400 });
  return jsonRead((db) => queueHealth(db, queue));
}
