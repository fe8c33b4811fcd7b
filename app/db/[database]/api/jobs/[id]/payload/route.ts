import { NextResponse } from "next/server";
import { apiAccess } from "@/lib/console/auth/viewer";
import { consolePool } from "@/lib/console/databases/db";
import { UUID_RE } from "@/lib/console/reads/filters";
import { jobPayloadJson } from "@/lib/console/reads/jobs";

export const dynamic = "force-dynamic";

/** The job's whole payload as a JSON download (the job page shows a preview and links here). Signed-in only. */
export async function GET(_req: Request, ctx: { params: Promise<{ id: string }> }) {
  const denied = await apiAccess();
  if (denied) return NextResponse.json({ error: denied.error }, { status: denied.status });
  const { id } = await ctx.params;
  if (!UUID_RE.test(id)) return NextResponse.json({ error: "Not a job id (UUID)." }, { status: 400 });
  const text = await jobPayloadJson(await consolePool(), id.toLowerCase());
  if (text === null) return NextResponse.json({ error: "No job has this id." }, { status: 404 });
  return new NextResponse(text, {
    headers: {
      "content-type": "application/json; charset=utf-8",
      "content-disposition": `attachment; filename="job-${id.toLowerCase()}-payload.json"`,
      "cache-control": "no-store",
    },
  });
}
