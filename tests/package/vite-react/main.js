// A React app from the installed tarball (react and react-dom installed beside it, as the
// optional peer): useAgent on the offline demo model, StrictMode on. It chats, denies the
// pending call with a reason, chats again and stops with the second call pending
// (data-done="pending": the test reloads the page); after the reload the call is pending
// again, it approves it, and sets data-done="ok". The log (sessionStorage) is what it saw.
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
const saved = JSON.parse(sessionStorage.getItem("gatehouse-test") ?? "null");
const run = saved ?? { threadId: "vite-react-" + Math.random().toString(36).slice(2), seen: [], loads: 0 };
run.loads++;
const seen = run.seen;
const save = () => sessionStorage.setItem("gatehouse-test", JSON.stringify(run));
const textOf = (m) => (m?.content ?? []).filter((b) => b.type === "text").map((b) => b.content).join("");
const pending = (a) => "pending:" + a.pendingTools.map((t) => t.name + " " + JSON.stringify(t.inputs)).join();

function App() {
  const a = useAgent({ threadId: run.threadId, storage: { database: "pkg-react" }, tools });
  const step = useRef(run.loads === 1 ? 0 : 10);
  useEffect(() => {
    if (a.status !== seen.at(-1)) seen.push(a.status);
    save();
    if (a.error) document.body.dataset.done = "error: " + (a.error.code ?? a.error);
    const s = step.current;
    if (!a.ready) return;
    if (s === 0 && a.status === "idle") {
      step.current = 1;
      a.chat('delete "C:/old_logs.txt"');
    } else if (s === 1 && a.status === "awaiting_approval") {
      step.current = 2;
      seen.push(pending(a));
      a.decide({ [a.pendingTools[0].callId]: ["reject", "Keep it for the audit"] });
    } else if (s === 2 && a.status === "idle") {
      step.current = 3;
      seen.push("answer:" + textOf(a.lastMessage));
      a.chat('delete "C:/tmp/cache.txt"');
    } else if (s === 3 && a.status === "awaiting_approval") {
      step.current = 4;
      seen.push(pending(a));
      save();
      document.body.dataset.done = "pending";
    } else if (s === 10 && a.status === "awaiting_approval") {
      step.current = 11;
      seen.push("after reload " + pending(a));
      a.decide({ [a.pendingTools[0].callId]: "approve" });
    } else if (s === 11 && a.status === "idle") {
      seen.push("answer:" + textOf(a.lastMessage));
      save();
      document.body.dataset.done = "ok";
    }
  });
  return h("pre", { id: "log" }, seen.join("\n"));
}

createRoot(document.getElementById("root")).render(h(StrictMode, null, h(App)));
