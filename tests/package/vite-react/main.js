// A React app from the installed tarball (react and react-dom installed beside it, as the
// optional peer): useAgent on the offline demo model, StrictMode on. It chats, shows the
// pending call, approves it, and sets data-done on <body> with what it saw.
import { StrictMode, createElement as h, useEffect, useRef } from "react";
import { createRoot } from "react-dom/client";
import { useAgent } from "gatehouse-agent/react";

const tools = [{
  name: "delete_file",
  description: "Delete a file",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  requireApproval: true,
  execute: async ({ path }) => ({ deleted: path }),
}];
const seen = [];
const threadId = "vite-react-" + Math.random().toString(36).slice(2);

function App() {
  const a = useAgent({ threadId, storage: { database: "pkg-react" }, tools });
  const step = useRef(0);
  useEffect(() => {
    if (a.status !== seen.at(-1)) seen.push(a.status);
    if (a.error) document.body.dataset.done = "error: " + (a.error.code ?? a.error);
    if (a.status === "idle" && step.current === 0) {
      step.current = 1;
      a.chat('delete "C:/old_logs.txt"');
    } else if (a.status === "awaiting_approval" && step.current === 1) {
      step.current = 2;
      seen.push("pending:" + a.pendingTools.map((t) => t.name + " " + JSON.stringify(t.inputs)).join());
      a.decide({ [a.pendingTools[0].callId]: "approve" });
    } else if (a.status === "idle" && step.current === 2) {
      document.body.dataset.done = "ok";
    }
  });
  return h("pre", { id: "log" }, seen.join("\n"));
}

createRoot(document.getElementById("root")).render(h(StrictMode, null, h(App)));
