// Tools of reenter.html: delete_file needs approval; its execute calls the agent back when
// the page's trigger is `execute`.
const trigger = new URLSearchParams(location.search).get('trigger');
export const tools = [{
  name: 'delete_file',
  description: 'Delete a file',
  parameters: { type: 'object', properties: { path: { type: 'string', description: 'The file' } }, required: ['path'] },
  requireApproval: true,
  execute: async (inputs) => {
    window.ran.push(inputs.path);
    if (trigger === 'execute') window.reenter('execute');
    return { deleted: inputs.path };
  },
}];
