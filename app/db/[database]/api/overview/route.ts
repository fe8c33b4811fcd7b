import { jsonRead } from "@/lib/console/api";
import { overview } from "@/lib/console/overview";

export const dynamic = "force-dynamic";

export function GET() {
  return jsonRead((db) => overview(db));
}
