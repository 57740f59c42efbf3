import { createLazyRoute } from '@tanstack/react-router';

function AcceptInvitePage() {
  return <main>{null}</main>;
}

export const Route = createLazyRoute('/accept-invite')({ component: AcceptInvitePage });
