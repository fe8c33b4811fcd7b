"use client";

export default function GlobalError({ error, reset }: { error: Error & { digest?: string }; reset: () => void }) {
  return (
    <html lang="en">
      <body style={{ fontFamily: "system-ui, sans-serif", padding: "2rem", color: "#0f172a" }}>
        <h1>The console hit an unexpected error</h1>
        <p>{error.digest ? `Reference ${error.digest} (in the server log).` : "See the server log."}</p>
        <button type="button" onClick={() => reset()}>
          Try again
        </button>
      </body>
    </html>
  );
}
