// The same tiny app for every consumer: a chat with one gated tool, approved, on the
// offline demo model. It reports progress in #log and sets data-done on <body> at the end.
export async function runApp(init, Agent) {
  const log = (line) => { document.querySelector("#log").textContent += line + "\n"; };
  try {
    await init();
    const agent = await Agent.open({
      threadId: "pkg-" + Math.random().toString(36).slice(2),
      storage: { kind: "indexeddb", database: "pkg-test" },
      tools: [{
        name: "delete_file",
        description: "Delete a file",
        parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
        requireApproval: true,
        execute: async ({ path }) => ({ deleted: path }),
      }],
    });
    let state = await agent.chat('delete "C:/old_logs.txt"');
    log("status: " + state.status);
    const [call] = agent.pendingTools();
    log("pending: " + call.name + " " + JSON.stringify(call.inputs));
    state = await agent.submitDecisions({ [call.callId]: "approve" });
    log("status: " + state.status);
    const messages = await agent.messages();
    log("result: " + messages.find((m) => m.type === "tool_call_result").tools[0].result);
    document.body.dataset.done = "ok";
  } catch (e) {
    log("error: " + (e && e.code) + " " + (e && e.message));
    document.body.dataset.done = "error";
  }
}
