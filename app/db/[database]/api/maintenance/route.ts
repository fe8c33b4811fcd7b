import { jsonRead } from "@/lib/console/reads/api";
import { maintenanceStatus } from "@/lib/console/reads/maintenance-status";

export const dynamic = "force-dynamic";

export function GET() {
  return jsonRead((db) => maintenanceStatus(db));
}
