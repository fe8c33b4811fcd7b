import { NextResponse } from "next/server";
import { jsonRead, NotFound } from "@/lib/console/reads/api";
import { UUID_RE } from "@/lib/console/reads/filters";
import { jobDetail } from "@/lib/console/reads/jobs";

export const dynamic = "force-dynamic";

export async function GET(_req: Request, ctx: { params: Promise<{ id: string }> }) {
  const { id } = await ctx.params;
  if (!UUID_RE.test(id)) return NextResponse.json({ error: "Not a job id (UUID)." }, { status: 400 });
  return jsonRead(async (db) => {
    const job = await jobDetail(db, id.toLowerCase());
    if (!job) throw new NotFound("No job has this id.");
    return job;
  });
}
