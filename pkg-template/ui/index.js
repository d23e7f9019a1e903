// @ts-check
// gatehouse-agent/ui: the approval cards, the composer, the chat view and the <gatehouse-chat>
// custom element, framework-free DOM, styled by gatehouse-agent/ui.css (custom properties for
// theming). Importing it has no side effect and brings no stylesheet into a bundle: the
// <gatehouse-chat> element (which loads the stylesheet into its shadow root) is in
// gatehouse-agent/ui/element, a module of its own.

export { ApprovalCards, approvalEntries, isSuspended, prettyInputs, progressText, h } from './cards.js';
export { ChatView } from './chat-view.js';
export { QuestionCards, hostOf } from './questions.js';
export { Composer } from './composer.js';
export { messageText } from './message-list.js';
export { describeError } from './errors.js';
