import type { Metadata } from "next";
import { MaintenancePanel } from "@/components/maintenance-panel";
import { PageHeader } from "@/components/ui";
import { requireViewer } from "@/lib/console/auth/viewer";
import { consolePool } from "@/lib/console/databases/db";
import { maintenanceStatus } from "@/lib/console/reads/maintenance-status";
import { runMaintenanceAction } from "./actions";

export const metadata: Metadata = { title: "Maintenance" };

export default async function MaintenancePage() {
  const viewer = await requireViewer();
  const data = await maintenanceStatus(await consolePool());
  return (
    <>
      <PageHeader
        title="Maintenance"
        description="Expired bindings stop owning their keys at once; cleanup only deletes the rows. It also enforces the observation log's retention (7 days)."
      />
      <MaintenancePanel initial={data} readOnly={viewer.readOnly} action={runMaintenanceAction} />
    </>
  );
}
