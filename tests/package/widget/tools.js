// The widget's tools: one gated tool; what it ran is kept on window for the test.
window.ran = [];
export const tools = [{
  name: "delete_file",
  label: "Delete file",
  description: "Delete a file",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  requireApproval: true,
  allowedDecisions: ["approve", "reject"],
  execute: async ({ path }) => { window.ran.push(path); return { deleted: path }; },
}];
