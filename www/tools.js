// The demo's tools. All fake: they work on an in-memory file list and an in-memory outbox
// that reset when the page reloads. This module is also what the widget's `tools`
// attribute points at (it exports `tools`, and optionally `suggestions`).

const INITIAL_FILES = [
  { path: 'C:/old_logs.txt', size: 48213 },
  { path: 'a.txt', size: 120 },
  { path: 'demo.txt', size: 42 },
  { path: 'notes/todo.md', size: 932 },
  { path: 'reports/q3.pdf', size: 210554 },
];

export const files = new Map(INITIAL_FILES.map((f) => [f.path, { ...f }]));
export const outbox = [];

const wait = (ms) => new Promise((r) => setTimeout(r, ms));

export const tools = [
  {
    name: 'delete_file',
    label: 'Delete file',
    description: 'Delete a file from the filesystem',
    parameters: {
      type: 'object',
      properties: { path: { type: 'string', description: 'Path of the file to delete' } },
      required: ['path'],
    },
    requireApproval: true,
    approvalReason: 'Deleting a file cannot be undone.',
    execute: async ({ path }) => {
      await wait(150);
      if (!files.has(path)) throw new Error(`No such file: ${path}`);
      files.delete(path);
      return { deleted: path };
    },
  },
  {
    name: 'send_email',
    label: 'Send email',
    description: 'Send an email to a recipient',
    parameters: {
      type: 'object',
      properties: {
        to: { type: 'string', description: 'Recipient address' },
        subject: { type: 'string' },
        body: { type: 'string' },
      },
      required: ['to', 'subject', 'body'],
    },
    approvalPolicy: ({ to }) =>
      `Sends an email to ${to} on your behalf; it cannot be unsent.`,
    execute: async ({ to, subject }) => {
      await wait(150);
      const id = `mail_${outbox.length + 1}`;
      outbox.push({ id, to, subject });
      return { sent: true, id, to };
    },
  },
  {
    name: 'list_files',
    label: 'List files',
    description: 'List the files in the workspace',
    parameters: { type: 'object', properties: {} },
    execute: async () => [...files.values()].map((f) => `${f.path} (${f.size} bytes)`),
  },
];

/** Prompts offered on an empty thread. */
export const suggestions = [
  'Delete C:/old_logs.txt',
  'Email team@example.com about the cleanup',
  'Delete a.txt and email team@example.com',
  'Show me list_files',
];
