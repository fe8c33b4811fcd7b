import Link from "next/link";

export default function NotFound() {
  return (
    <main className="mx-auto max-w-xl px-4 py-16">
      <h1 className="text-2xl font-semibold text-slate-900">Page not found</h1>
      <p className="mt-2 text-slate-700">There is no console page at this address.</p>
      <Link className="mt-4 inline-block text-blue-700 underline" href="/">
        Go to the overview
      </Link>
    </main>
  );
}
