import { jsonRead } from "@/lib/console/api";
import { maintenanceStatus } from "@/lib/console/maintenance-status";

export const dynamic = "force-dynamic";

export function GET() {
  return jsonRead((db) => maintenanceStatus(db));
}
