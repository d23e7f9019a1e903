// The approval card's approver-rule line (pkg-template/ui/cards.js `progressText`, README
// "Approver rules"): what a person reads on a call under a quorum, and why they may not decide.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { progressText } from '../../pkg-template/ui/cards.js';

test('progressText: the count and who, then why this user may not decide; nothing for a plain call', () => {
  assert.equal(progressText(undefined), '');
  assert.equal(progressText({ approvals: [], needed: 1, blocked: null }), '', 'one approval by anyone: no line');
  assert.equal(progressText({ approvals: [], needed: 2, blocked: null }), '0 of 2 approvals.');
  assert.equal(progressText({ approvals: [{ by: 'bob' }, { by: null }], needed: 3, blocked: null }),
    '2 of 3 approvals: bob, someone.');
  assert.equal(progressText({ approvals: [{ by: 'bob' }], needed: 2, blocked: 'self_approval' }),
    '1 of 2 approvals: bob. You asked for this action, so someone else must approve it.');
  assert.equal(progressText({ approvals: [], needed: 1, blocked: 'not_an_approver' }),
    'You are not one of the people who may decide this action.');
});
