// Tools of expiry.html: delete_file waits at most 600 ms for a decision (approvalTimeout);
// what ran is kept in window.ran for expiry.test.mjs.
window.ran = [];
export const tools = [{
  name: 'delete_file',
  description: 'Delete a file',
  parameters: { type: 'object', properties: { path: { type: 'string', description: 'The file' } }, required: ['path'] },
  requireApproval: true,
  approvalTimeout: 600,
  execute: async (inputs) => {
    window.ran.push(inputs);
    return { deleted: inputs.path };
  },
}];
