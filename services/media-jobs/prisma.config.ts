import { prismaConfigFor } from "@meter/db-tools";

export default prismaConfigFor("media-jobs");
