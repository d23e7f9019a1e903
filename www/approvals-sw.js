// The demo phone's approvals worker (`make demo-remote`, "Enable push"): shows the store
// handler's approval requests as notifications whose Approve and Reject decide as the user in
// this worker's URL (`?user=`), the demo's bearer token. A real app's worker would read a
// token it keeps, or rely on cookies (the default). Registered at a scope no page uses, so
// the offline worker (sw.js) stays as it is.
import { installApprovalHandlers } from '../pkg/sw.js';

const user = new URL(self.location.href).searchParams.get('user') || 'manager';
installApprovalHandlers(self, {
  credentials: 'omit',
  headers: () => ({ authorization: `Bearer ${user}` }),
});
self.addEventListener('install', () => self.skipWaiting());
