import type { Metadata } from "next";
import { FindKeyForm } from "@/components/find-key-form";
import { PageHeader } from "@/components/ui";
import { requireViewer } from "@/lib/console/session";

export const metadata: Metadata = { title: "Find by key" };

export default async function FindPage() {
  await requireViewer();
  return (
    <>
      <PageHeader
        title="Find a job by key"
        description="For support: paste the idempotency key a customer's request used. The lookup is a POST; the key is hashed on the server and never appears in a URL, a page or a log."
      />
      <FindKeyForm />
    </>
  );
}
