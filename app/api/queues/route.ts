import { jsonRead } from "@/lib/console/api";
import { queueSummaries } from "@/lib/console/overview";

export const dynamic = "force-dynamic";

export function GET() {
  return jsonRead((db) => queueSummaries(db));
}
