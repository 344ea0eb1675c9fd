import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { CabinetMe, OperatorMe } from "@meter/contracts";

export type Me = CabinetMe | OperatorMe;

export interface SessionState {
  me: Me;
  setMe(me: Me): void;
  /** Ends this session, or with `everywhere` every session of the same person. */
  signOut(everywhere: boolean): Promise<void>;
}

export const SessionContext = createContext<SessionState | null>(null);

export function useSession(): SessionState {
  const s = useContext(SessionContext);
  if (!s) throw new Error("useSession outside a signed-in page");
  return s;
}

export function useMember(): CabinetMe {
  const { me } = useSession();
  if (me.role !== "member") throw new Error("a member's page under an operator's session");
  return me;
}
