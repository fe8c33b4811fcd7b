import { headers } from "next/headers";
import { QueueNotFound } from "@/components/queue-not-found";
import { PATH_HEADER } from "@/lib/console/auth/request-info";
import { queuePath } from "@/lib/console/reads/open-queue";

/** The queue page's notFound() after a client navigation (a full load is decided by the layout). */
export default async function QueuePageNotFound() {
  return <QueueNotFound named={queuePath((await headers()).get(PATH_HEADER) ?? "") ?? { kind: "invalid" }} />;
}
