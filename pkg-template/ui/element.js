// @ts-check
// gatehouse-agent/ui/element: defines <gatehouse-chat> on import (the one module of the package
// with a side effect besides the CSS; the element loads ui/gatehouse.css into its shadow root,
// so a bundler emits that file only for apps that import this module). A page needs only this script and the element:
//
//   <script type="module" src="https://cdn.jsdelivr.net/npm/gatehouse-agent/ui/element.js"></script>
//   <gatehouse-chat thread-id="support"></gatehouse-chat>

import { GatehouseChat, defineGatehouseChat } from './widget.js';

defineGatehouseChat();

export { GatehouseChat, defineGatehouseChat };
