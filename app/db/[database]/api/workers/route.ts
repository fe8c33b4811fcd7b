import { jsonRead } from "@/lib/console/reads/api";
import { listWorkers } from "@/lib/console/reads/workers";

export const dynamic = "force-dynamic";

export function GET() {
  return jsonRead((db) => listWorkers(db));
}
