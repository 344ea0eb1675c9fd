import { prismaConfigFor } from "@meter/db-tools";

export default prismaConfigFor("mcp");
