import { jsonRead } from "@/lib/console/api";
import { listWorkers } from "@/lib/console/workers";

export const dynamic = "force-dynamic";

export function GET() {
  return jsonRead((db) => listWorkers(db));
}
