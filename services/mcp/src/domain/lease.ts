/** A slot of the organization's active-call limit, held by one process for one running tool call. */
export interface Lease {
  id: string;
  organizationId: string;
  processId: string;
  tool: string;
}
