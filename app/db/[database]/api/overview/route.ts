import { jsonRead } from "@/lib/console/reads/api";
import { overview } from "@/lib/console/reads/overview";

export const dynamic = "force-dynamic";

export function GET() {
  return jsonRead((db) => overview(db));
}
