// gatehouse-agent/ui: the approval cards, the chat view and the <gatehouse-chat> custom
// element, framework-free DOM, styled by gatehouse-agent/ui.css (custom properties for
// theming). Importing this module defines <gatehouse-chat> unless the page defined one.

export { ApprovalCards, approvalEntries, isSuspended, prettyInputs, h } from './cards.js';
export { ChatView } from './chat-view.js';
export { messageText } from './message-list.js';
export { GatehouseChat } from './widget.js';
